;; encode.wat: Format.EncodeScaledRows's loops for the formats package fp8
;; converts through its code table (enctable.go's encodeScalar) and for
;; bfloat16 (encvec.go's encodeBF16Loop), as hand-written WebAssembly for
;; the js/wasm build (see package internal/wasmk). The same operations
;; for every element: the quotient x/scale in float32 (IEEE, as Go's), its
;; bits, then the code from the table, or bfloat16's round to nearest even
;; on the upper 16 bits. Four elements go at a time where the layout lets
;; their codes be stored as one 8-byte word (a row's with dstCol 1, or four
;; rows' of a column with dstRow 1): their quotients in one f32x4 division
;; (each lane IEEE's), the rest lane by lane. An element the Go loop sends
;; to its slow path (a table entry marked slow, or marked tie with a lower
;; half of 0; a NaN for bfloat16) has its index r*cols + c listed in slow,
;; and the caller converts it as the Go loop does, writing over whatever
;; the kernel stored there (the four-at-a-time paths store a code for it,
;; the element loops nothing).
;;
;; table(P) and bf16(P): P is the address of 12 u32 words:
;;   0 src (f32)   1 srcRow (elements between rows)   2 rows   3 cols
;;   4 dst (u16)   5 dstRow   6 dstCol (elements)   7 table (u16[65536]; table only)
;;   8 divide (0: q = x)   9 scale (f32 bits)   10 slow (i32[rows*cols])   11 unused
;; element (r, c) is src[r*srcRow + c], its code goes to dst[r*dstRow + c*dstCol].
;; Each returns the number of indices written to slow. maxrows (below) is
;; Calibrate's largest magnitudes, row by row.
(module
  (import "env" "mem" (memory 0))

  (func $table (export "table") (param $P i32) (result i32)
    (local $src i32) (local $srcRow4 i32) (local $rows i32) (local $cols i32) (local $dst i32)
    (local $dstRow2 i32) (local $dstCol2 i32) (local $tab i32) (local $div i32) (local $scale f32) (local $slow i32)
    (local $r i32) (local $c i32) (local $sp i32) (local $dp i32) (local $ns i32) (local $q f32) (local $b i32) (local $code i32)
    (local $sp0 i32) (local $sp1 i32) (local $sp2 i32) (local $sp3 i32) (local $v v128) (local $vscale v128)
    (local $w0 i32) (local $w1 i32) (local $w2 i32) (local $w3 i32)
    (local.set $src (i32.load offset=0 (local.get $P)))
    (local.set $srcRow4 (i32.shl (i32.load offset=4 (local.get $P)) (i32.const 2)))
    (local.set $rows (i32.load offset=8 (local.get $P)))
    (local.set $cols (i32.load offset=12 (local.get $P)))
    (local.set $dst (i32.load offset=16 (local.get $P)))
    (local.set $dstRow2 (i32.shl (i32.load offset=20 (local.get $P)) (i32.const 1)))
    (local.set $dstCol2 (i32.shl (i32.load offset=24 (local.get $P)) (i32.const 1)))
    (local.set $tab (i32.load offset=28 (local.get $P)))
    (local.set $div (i32.load offset=32 (local.get $P)))
    (local.set $scale (f32.load offset=36 (local.get $P)))
    (local.set $slow (i32.load offset=40 (local.get $P)))
    (local.set $vscale (f32x4.splat (local.get $scale)))
    ;; The transposed layout (dstRow 1: a column's codes of consecutive
    ;; rows side by side, V's): four rows a pass, a column's four elements
    ;; gathered into an f32x4 (the quotients each IEEE's), their codes
    ;; from the table one by one and stored as one 8-byte word, so that a
    ;; pass over the columns, each a row of dst a stride apart, stores a
    ;; quarter as often. A slow element's code is stored too, and its
    ;; index listed: the caller writes it over.
    (if (i32.eq (local.get $dstRow2) (i32.const 2))
      (then
        (block $blkDone
          (loop $blk
            (br_if $blkDone (i32.gt_u (i32.add (local.get $r) (i32.const 4)) (local.get $rows)))
            (local.set $sp0 (i32.add (local.get $src) (i32.mul (local.get $r) (local.get $srcRow4))))
            (local.set $sp1 (i32.add (local.get $sp0) (local.get $srcRow4)))
            (local.set $sp2 (i32.add (local.get $sp1) (local.get $srcRow4)))
            (local.set $sp3 (i32.add (local.get $sp2) (local.get $srcRow4)))
            (local.set $dp (i32.add (local.get $dst) (i32.shl (local.get $r) (i32.const 1))))
            (local.set $c (i32.const 0))
            (block $bcDone
              (loop $bc
                (br_if $bcDone (i32.ge_u (local.get $c) (local.get $cols)))
                (local.set $v (v128.load32_lane 0 (i32.add (local.get $sp0) (i32.shl (local.get $c) (i32.const 2))) (local.get $v)))
                (local.set $v (v128.load32_lane 1 (i32.add (local.get $sp1) (i32.shl (local.get $c) (i32.const 2))) (local.get $v)))
                (local.set $v (v128.load32_lane 2 (i32.add (local.get $sp2) (i32.shl (local.get $c) (i32.const 2))) (local.get $v)))
                (local.set $v (v128.load32_lane 3 (i32.add (local.get $sp3) (i32.shl (local.get $c) (i32.const 2))) (local.get $v)))
                (if (local.get $div) (then (local.set $v (f32x4.div (local.get $v) (local.get $vscale)))))
                (local.set $b (i32x4.extract_lane 0 (local.get $v)))
                (local.set $code (i32.load16_u (i32.add (local.get $tab) (i32.shl (i32.shr_u (local.get $b) (i32.const 16)) (i32.const 1)))))
                (if (i32.and
                      (i32.ne (i32.and (local.get $code) (i32.const 0xc000)) (i32.const 0))
                      (i32.or (i32.ne (i32.and (local.get $code) (i32.const 0x8000)) (i32.const 0))
                              (i32.eqz (i32.and (local.get $b) (i32.const 0xffff)))))
                  (then
                    (i32.store (i32.add (local.get $slow) (i32.shl (local.get $ns) (i32.const 2)))
                      (i32.add (i32.mul (i32.add (local.get $r) (i32.const 0)) (local.get $cols)) (local.get $c)))
                    (local.set $ns (i32.add (local.get $ns) (i32.const 1)))))
                (local.set $w0 (i32.and (local.get $code) (i32.const 0x3fff)))
                (local.set $b (i32x4.extract_lane 1 (local.get $v)))
                (local.set $code (i32.load16_u (i32.add (local.get $tab) (i32.shl (i32.shr_u (local.get $b) (i32.const 16)) (i32.const 1)))))
                (if (i32.and
                      (i32.ne (i32.and (local.get $code) (i32.const 0xc000)) (i32.const 0))
                      (i32.or (i32.ne (i32.and (local.get $code) (i32.const 0x8000)) (i32.const 0))
                              (i32.eqz (i32.and (local.get $b) (i32.const 0xffff)))))
                  (then
                    (i32.store (i32.add (local.get $slow) (i32.shl (local.get $ns) (i32.const 2)))
                      (i32.add (i32.mul (i32.add (local.get $r) (i32.const 1)) (local.get $cols)) (local.get $c)))
                    (local.set $ns (i32.add (local.get $ns) (i32.const 1)))))
                (local.set $w1 (i32.and (local.get $code) (i32.const 0x3fff)))
                (local.set $b (i32x4.extract_lane 2 (local.get $v)))
                (local.set $code (i32.load16_u (i32.add (local.get $tab) (i32.shl (i32.shr_u (local.get $b) (i32.const 16)) (i32.const 1)))))
                (if (i32.and
                      (i32.ne (i32.and (local.get $code) (i32.const 0xc000)) (i32.const 0))
                      (i32.or (i32.ne (i32.and (local.get $code) (i32.const 0x8000)) (i32.const 0))
                              (i32.eqz (i32.and (local.get $b) (i32.const 0xffff)))))
                  (then
                    (i32.store (i32.add (local.get $slow) (i32.shl (local.get $ns) (i32.const 2)))
                      (i32.add (i32.mul (i32.add (local.get $r) (i32.const 2)) (local.get $cols)) (local.get $c)))
                    (local.set $ns (i32.add (local.get $ns) (i32.const 1)))))
                (local.set $w2 (i32.and (local.get $code) (i32.const 0x3fff)))
                (local.set $b (i32x4.extract_lane 3 (local.get $v)))
                (local.set $code (i32.load16_u (i32.add (local.get $tab) (i32.shl (i32.shr_u (local.get $b) (i32.const 16)) (i32.const 1)))))
                (if (i32.and
                      (i32.ne (i32.and (local.get $code) (i32.const 0xc000)) (i32.const 0))
                      (i32.or (i32.ne (i32.and (local.get $code) (i32.const 0x8000)) (i32.const 0))
                              (i32.eqz (i32.and (local.get $b) (i32.const 0xffff)))))
                  (then
                    (i32.store (i32.add (local.get $slow) (i32.shl (local.get $ns) (i32.const 2)))
                      (i32.add (i32.mul (i32.add (local.get $r) (i32.const 3)) (local.get $cols)) (local.get $c)))
                    (local.set $ns (i32.add (local.get $ns) (i32.const 1)))))
                (local.set $w3 (i32.and (local.get $code) (i32.const 0x3fff)))
                (i64.store (local.get $dp) (i64.or
                  (i64.extend_i32_u (i32.or (local.get $w0) (i32.shl (local.get $w1) (i32.const 16))))
                  (i64.shl (i64.extend_i32_u (i32.or (local.get $w2) (i32.shl (local.get $w3) (i32.const 16)))) (i64.const 32))))
                (local.set $dp (i32.add (local.get $dp) (local.get $dstCol2)))
                (local.set $c (i32.add (local.get $c) (i32.const 1)))
                (br $bc)))
            (local.set $r (i32.add (local.get $r) (i32.const 4)))
            (br $blk)))))
    (block $rowsDone
      (loop $rowLoop
        (br_if $rowsDone (i32.ge_u (local.get $r) (local.get $rows)))
        (local.set $sp (i32.add (local.get $src) (i32.mul (local.get $r) (local.get $srcRow4))))
        (local.set $dp (i32.add (local.get $dst) (i32.mul (local.get $r) (local.get $dstRow2))))
        (local.set $c (i32.const 0))
        ;; Contiguous codes (dstCol 1, K's): four elements a step, their
        ;; quotients in one f32x4 division, their codes stored as one
        ;; 8-byte word (a slow element's too, listed for the caller).
        (if (i32.eq (local.get $dstCol2) (i32.const 2))
          (then
            (block $vecDone
              (loop $vec
                (br_if $vecDone (i32.gt_u (i32.add (local.get $c) (i32.const 4)) (local.get $cols)))
                (local.set $v (v128.load (local.get $sp)))
                (if (local.get $div) (then (local.set $v (f32x4.div (local.get $v) (local.get $vscale)))))
                (local.set $b (i32x4.extract_lane 0 (local.get $v)))
                (local.set $code (i32.load16_u (i32.add (local.get $tab) (i32.shl (i32.shr_u (local.get $b) (i32.const 16)) (i32.const 1)))))
                (if (i32.and
                      (i32.ne (i32.and (local.get $code) (i32.const 0xc000)) (i32.const 0))
                      (i32.or (i32.ne (i32.and (local.get $code) (i32.const 0x8000)) (i32.const 0))
                              (i32.eqz (i32.and (local.get $b) (i32.const 0xffff)))))
                  (then
                    (i32.store (i32.add (local.get $slow) (i32.shl (local.get $ns) (i32.const 2)))
                      (i32.add (i32.mul (local.get $r) (local.get $cols)) (i32.add (local.get $c) (i32.const 0))))
                    (local.set $ns (i32.add (local.get $ns) (i32.const 1)))))
                (local.set $w0 (i32.and (local.get $code) (i32.const 0x3fff)))
                (local.set $b (i32x4.extract_lane 1 (local.get $v)))
                (local.set $code (i32.load16_u (i32.add (local.get $tab) (i32.shl (i32.shr_u (local.get $b) (i32.const 16)) (i32.const 1)))))
                (if (i32.and
                      (i32.ne (i32.and (local.get $code) (i32.const 0xc000)) (i32.const 0))
                      (i32.or (i32.ne (i32.and (local.get $code) (i32.const 0x8000)) (i32.const 0))
                              (i32.eqz (i32.and (local.get $b) (i32.const 0xffff)))))
                  (then
                    (i32.store (i32.add (local.get $slow) (i32.shl (local.get $ns) (i32.const 2)))
                      (i32.add (i32.mul (local.get $r) (local.get $cols)) (i32.add (local.get $c) (i32.const 1))))
                    (local.set $ns (i32.add (local.get $ns) (i32.const 1)))))
                (local.set $w1 (i32.and (local.get $code) (i32.const 0x3fff)))
                (local.set $b (i32x4.extract_lane 2 (local.get $v)))
                (local.set $code (i32.load16_u (i32.add (local.get $tab) (i32.shl (i32.shr_u (local.get $b) (i32.const 16)) (i32.const 1)))))
                (if (i32.and
                      (i32.ne (i32.and (local.get $code) (i32.const 0xc000)) (i32.const 0))
                      (i32.or (i32.ne (i32.and (local.get $code) (i32.const 0x8000)) (i32.const 0))
                              (i32.eqz (i32.and (local.get $b) (i32.const 0xffff)))))
                  (then
                    (i32.store (i32.add (local.get $slow) (i32.shl (local.get $ns) (i32.const 2)))
                      (i32.add (i32.mul (local.get $r) (local.get $cols)) (i32.add (local.get $c) (i32.const 2))))
                    (local.set $ns (i32.add (local.get $ns) (i32.const 1)))))
                (local.set $w2 (i32.and (local.get $code) (i32.const 0x3fff)))
                (local.set $b (i32x4.extract_lane 3 (local.get $v)))
                (local.set $code (i32.load16_u (i32.add (local.get $tab) (i32.shl (i32.shr_u (local.get $b) (i32.const 16)) (i32.const 1)))))
                (if (i32.and
                      (i32.ne (i32.and (local.get $code) (i32.const 0xc000)) (i32.const 0))
                      (i32.or (i32.ne (i32.and (local.get $code) (i32.const 0x8000)) (i32.const 0))
                              (i32.eqz (i32.and (local.get $b) (i32.const 0xffff)))))
                  (then
                    (i32.store (i32.add (local.get $slow) (i32.shl (local.get $ns) (i32.const 2)))
                      (i32.add (i32.mul (local.get $r) (local.get $cols)) (i32.add (local.get $c) (i32.const 3))))
                    (local.set $ns (i32.add (local.get $ns) (i32.const 1)))))
                (local.set $w3 (i32.and (local.get $code) (i32.const 0x3fff)))
                (i64.store (local.get $dp) (i64.or
                  (i64.extend_i32_u (i32.or (local.get $w0) (i32.shl (local.get $w1) (i32.const 16))))
                  (i64.shl (i64.extend_i32_u (i32.or (local.get $w2) (i32.shl (local.get $w3) (i32.const 16)))) (i64.const 32))))
                (local.set $sp (i32.add (local.get $sp) (i32.const 16)))
                (local.set $dp (i32.add (local.get $dp) (i32.const 8)))
                (local.set $c (i32.add (local.get $c) (i32.const 4)))
                (br $vec)))))
        (block $colsDone
          (loop $colLoop
            (br_if $colsDone (i32.ge_u (local.get $c) (local.get $cols)))
            (local.set $q (f32.load (local.get $sp)))
            (if (local.get $div) (then (local.set $q (f32.div (local.get $q) (local.get $scale)))))
            (local.set $b (i32.reinterpret_f32 (local.get $q)))
            (local.set $code (i32.load16_u (i32.add (local.get $tab) (i32.shl (i32.shr_u (local.get $b) (i32.const 16)) (i32.const 1)))))
            (if (i32.and
                  (i32.ne (i32.and (local.get $code) (i32.const 0xc000)) (i32.const 0))
                  (i32.or (i32.ne (i32.and (local.get $code) (i32.const 0x8000)) (i32.const 0))
                          (i32.eqz (i32.and (local.get $b) (i32.const 0xffff)))))
              (then
                (i32.store (i32.add (local.get $slow) (i32.shl (local.get $ns) (i32.const 2)))
                  (i32.add (i32.mul (local.get $r) (local.get $cols)) (local.get $c)))
                (local.set $ns (i32.add (local.get $ns) (i32.const 1))))
              (else (i32.store16 (local.get $dp) (i32.and (local.get $code) (i32.const 0x3fff)))))
            (local.set $sp (i32.add (local.get $sp) (i32.const 4)))
            (local.set $dp (i32.add (local.get $dp) (local.get $dstCol2)))
            (local.set $c (i32.add (local.get $c) (i32.const 1)))
            (br $colLoop)))
        (local.set $r (i32.add (local.get $r) (i32.const 1)))
        (br $rowLoop)))
    (local.get $ns))

  (func $bf16 (export "bf16") (param $P i32) (result i32)
    (local $src i32) (local $srcRow4 i32) (local $rows i32) (local $cols i32) (local $dst i32)
    (local $dstRow2 i32) (local $dstCol2 i32) (local $div i32) (local $scale f32) (local $slow i32)
    (local $r i32) (local $c i32) (local $sp i32) (local $dp i32) (local $ns i32) (local $q f32) (local $b i32)
    (local $v v128) (local $vscale v128) (local $absMask v128) (local $infBits v128) (local $half v128) (local $one v128)
    (local $sp0 i32) (local $sp1 i32) (local $sp2 i32) (local $sp3 i32)
    (local.set $src (i32.load offset=0 (local.get $P)))
    (local.set $srcRow4 (i32.shl (i32.load offset=4 (local.get $P)) (i32.const 2)))
    (local.set $rows (i32.load offset=8 (local.get $P)))
    (local.set $cols (i32.load offset=12 (local.get $P)))
    (local.set $dst (i32.load offset=16 (local.get $P)))
    (local.set $dstRow2 (i32.shl (i32.load offset=20 (local.get $P)) (i32.const 1)))
    (local.set $dstCol2 (i32.shl (i32.load offset=24 (local.get $P)) (i32.const 1)))
    (local.set $div (i32.load offset=32 (local.get $P)))
    (local.set $scale (f32.load offset=36 (local.get $P)))
    (local.set $slow (i32.load offset=40 (local.get $P)))
    (local.set $vscale (f32x4.splat (local.get $scale)))
    (local.set $absMask (i32x4.splat (i32.const 0x7fffffff)))
    (local.set $infBits (i32x4.splat (i32.const 0x7f800000)))
    (local.set $half (i32x4.splat (i32.const 0x7fff)))
    (local.set $one (i32x4.splat (i32.const 1)))
    ;; The transposed layout (dstRow 1), four rows a pass as table's: a
    ;; column's four elements gathered, divided, rounded on the lanes'
    ;; bits and stored as one 8-byte word; a NaN quotient's code is stored
    ;; too and its index listed (the caller writes it over).
    (if (i32.eq (local.get $dstRow2) (i32.const 2))
      (then
        (block $blkDone
          (loop $blk
            (br_if $blkDone (i32.gt_u (i32.add (local.get $r) (i32.const 4)) (local.get $rows)))
            (local.set $sp0 (i32.add (local.get $src) (i32.mul (local.get $r) (local.get $srcRow4))))
            (local.set $sp1 (i32.add (local.get $sp0) (local.get $srcRow4)))
            (local.set $sp2 (i32.add (local.get $sp1) (local.get $srcRow4)))
            (local.set $sp3 (i32.add (local.get $sp2) (local.get $srcRow4)))
            (local.set $dp (i32.add (local.get $dst) (i32.shl (local.get $r) (i32.const 1))))
            (local.set $c (i32.const 0))
            (block $bcDone
              (loop $bc
                (br_if $bcDone (i32.ge_u (local.get $c) (local.get $cols)))
                (local.set $v (v128.load32_lane 0 (i32.add (local.get $sp0) (i32.shl (local.get $c) (i32.const 2))) (local.get $v)))
                (local.set $v (v128.load32_lane 1 (i32.add (local.get $sp1) (i32.shl (local.get $c) (i32.const 2))) (local.get $v)))
                (local.set $v (v128.load32_lane 2 (i32.add (local.get $sp2) (i32.shl (local.get $c) (i32.const 2))) (local.get $v)))
                (local.set $v (v128.load32_lane 3 (i32.add (local.get $sp3) (i32.shl (local.get $c) (i32.const 2))) (local.get $v)))
                (if (local.get $div) (then (local.set $v (f32x4.div (local.get $v) (local.get $vscale)))))
                (if (v128.any_true (i32x4.gt_u (v128.and (local.get $v) (local.get $absMask)) (local.get $infBits)))
                  (then
                    (if (i32.gt_u (i32.and (i32x4.extract_lane 0 (local.get $v)) (i32.const 0x7fffffff)) (i32.const 0x7f800000))
                      (then
                        (i32.store (i32.add (local.get $slow) (i32.shl (local.get $ns) (i32.const 2)))
                          (i32.add (i32.mul (i32.add (local.get $r) (i32.const 0)) (local.get $cols)) (local.get $c)))
                        (local.set $ns (i32.add (local.get $ns) (i32.const 1)))))
                    (if (i32.gt_u (i32.and (i32x4.extract_lane 1 (local.get $v)) (i32.const 0x7fffffff)) (i32.const 0x7f800000))
                      (then
                        (i32.store (i32.add (local.get $slow) (i32.shl (local.get $ns) (i32.const 2)))
                          (i32.add (i32.mul (i32.add (local.get $r) (i32.const 1)) (local.get $cols)) (local.get $c)))
                        (local.set $ns (i32.add (local.get $ns) (i32.const 1)))))
                    (if (i32.gt_u (i32.and (i32x4.extract_lane 2 (local.get $v)) (i32.const 0x7fffffff)) (i32.const 0x7f800000))
                      (then
                        (i32.store (i32.add (local.get $slow) (i32.shl (local.get $ns) (i32.const 2)))
                          (i32.add (i32.mul (i32.add (local.get $r) (i32.const 2)) (local.get $cols)) (local.get $c)))
                        (local.set $ns (i32.add (local.get $ns) (i32.const 1)))))
                    (if (i32.gt_u (i32.and (i32x4.extract_lane 3 (local.get $v)) (i32.const 0x7fffffff)) (i32.const 0x7f800000))
                      (then
                        (i32.store (i32.add (local.get $slow) (i32.shl (local.get $ns) (i32.const 2)))
                          (i32.add (i32.mul (i32.add (local.get $r) (i32.const 3)) (local.get $cols)) (local.get $c)))
                        (local.set $ns (i32.add (local.get $ns) (i32.const 1)))))
))
                (local.set $v (i32x4.shr_u
                  (i32x4.add (i32x4.add (local.get $v) (local.get $half))
                    (v128.and (i32x4.shr_u (local.get $v) (i32.const 16)) (local.get $one)))
                  (i32.const 16)))
                (v128.store64_lane 0 (local.get $dp)
                  (i8x16.shuffle 0 1 4 5 8 9 12 13 0 1 4 5 8 9 12 13 (local.get $v) (local.get $v)))
                (local.set $dp (i32.add (local.get $dp) (local.get $dstCol2)))
                (local.set $c (i32.add (local.get $c) (i32.const 1)))
                (br $bc)))
            (local.set $r (i32.add (local.get $r) (i32.const 4)))
            (br $blk)))))
    (block $rowsDone
      (loop $rowLoop
        (br_if $rowsDone (i32.ge_u (local.get $r) (local.get $rows)))
        (local.set $sp (i32.add (local.get $src) (i32.mul (local.get $r) (local.get $srcRow4))))
        (local.set $dp (i32.add (local.get $dst) (i32.mul (local.get $r) (local.get $dstRow2))))
        (local.set $c (i32.const 0))
        ;; Four columns a step while four remain and none is NaN: the
        ;; quotients in an f32x4 (each IEEE's, as the scalar division's),
        ;; the rounding on the lanes' bits, the four codes stored; a step
        ;; with a NaN quotient goes to the element loop below.
        (block $vecDone
          (loop $vecLoop
            (br_if $vecDone (i32.gt_u (i32.add (local.get $c) (i32.const 4)) (local.get $cols)))
            (local.set $v (v128.load (local.get $sp)))
            (if (local.get $div) (then (local.set $v (f32x4.div (local.get $v) (local.get $vscale)))))
            (br_if $vecDone (v128.any_true (i32x4.gt_u (v128.and (local.get $v) (local.get $absMask)) (local.get $infBits))))
            (local.set $v (i32x4.shr_u
              (i32x4.add (i32x4.add (local.get $v) (local.get $half))
                (v128.and (i32x4.shr_u (local.get $v) (i32.const 16)) (local.get $one)))
              (i32.const 16)))
            (if (i32.eq (local.get $dstCol2) (i32.const 2))
              (then
                (v128.store64_lane 0 (local.get $dp)
                  (i8x16.shuffle 0 1 4 5 8 9 12 13 0 1 4 5 8 9 12 13 (local.get $v) (local.get $v))))
              (else
                (i32.store16 (local.get $dp) (i32x4.extract_lane 0 (local.get $v)))
                (i32.store16 (i32.add (local.get $dp) (local.get $dstCol2)) (i32x4.extract_lane 1 (local.get $v)))
                (i32.store16 (i32.add (local.get $dp) (i32.shl (local.get $dstCol2) (i32.const 1))) (i32x4.extract_lane 2 (local.get $v)))
                (i32.store16 (i32.add (local.get $dp) (i32.mul (local.get $dstCol2) (i32.const 3))) (i32x4.extract_lane 3 (local.get $v)))))
            (local.set $sp (i32.add (local.get $sp) (i32.const 16)))
            (local.set $dp (i32.add (local.get $dp) (i32.shl (local.get $dstCol2) (i32.const 2))))
            (local.set $c (i32.add (local.get $c) (i32.const 4)))
            (br $vecLoop)))
        (block $colsDone
          (loop $colLoop
            (br_if $colsDone (i32.ge_u (local.get $c) (local.get $cols)))
            (local.set $q (f32.load (local.get $sp)))
            (if (local.get $div) (then (local.set $q (f32.div (local.get $q) (local.get $scale)))))
            (local.set $b (i32.reinterpret_f32 (local.get $q)))
            (if (i32.gt_u (i32.and (local.get $b) (i32.const 0x7fffffff)) (i32.const 0x7f800000))
              (then
                (i32.store (i32.add (local.get $slow) (i32.shl (local.get $ns) (i32.const 2)))
                  (i32.add (i32.mul (local.get $r) (local.get $cols)) (local.get $c)))
                (local.set $ns (i32.add (local.get $ns) (i32.const 1))))
              (else
                (i32.store16 (local.get $dp)
                  (i32.shr_u
                    (i32.add (i32.add (local.get $b) (i32.const 0x7fff)) (i32.and (i32.shr_u (local.get $b) (i32.const 16)) (i32.const 1)))
                    (i32.const 16)))))
            (local.set $sp (i32.add (local.get $sp) (i32.const 4)))
            (local.set $dp (i32.add (local.get $dp) (local.get $dstCol2)))
            (local.set $c (i32.add (local.get $c) (i32.const 1)))
            (br $colLoop)))
        (local.set $r (i32.add (local.get $r) (i32.const 1)))
        (br $rowLoop)))
    (local.get $ns))
;; maxrows(P): P is the address of 8 u32 words:
  ;;   0 x (f32)   1 rows   2 cols   3 rowStride (elements)   4 out (u32[rows])
  ;;   5-7 unused
  ;; out[r] = the largest magnitude bits (bits & 0x7fffffff) among row r's
  ;; elements that are not NaN (at most +Inf's 0x7f800000; 0 for none):
  ;; Calibrate's runMax, which takes MaxAbs and, for a run holding a NaN,
  ;; the largest of the others. Four elements a step while four remain.
  (func $maxrows (export "maxrows") (param $P i32)
    (local $x i32) (local $rows i32) (local $cols i32) (local $stride4 i32) (local $out i32)
    (local $r i32) (local $p i32) (local $end i32) (local $end4 i32) (local $m v128) (local $a v128)
    (local $inf v128) (local $abs v128) (local $s i32) (local $t i32)
    (local.set $x (i32.load offset=0 (local.get $P)))
    (local.set $rows (i32.load offset=4 (local.get $P)))
    (local.set $cols (i32.load offset=8 (local.get $P)))
    (local.set $stride4 (i32.shl (i32.load offset=12 (local.get $P)) (i32.const 2)))
    (local.set $out (i32.load offset=16 (local.get $P)))
    (local.set $inf (i32x4.splat (i32.const 0x7f800000)))
    (local.set $abs (i32x4.splat (i32.const 0x7fffffff)))
    (block $rowsDone
      (loop $rowLoop
        (br_if $rowsDone (i32.ge_u (local.get $r) (local.get $rows)))
        (local.set $p (i32.add (local.get $x) (i32.mul (local.get $r) (local.get $stride4))))
        (local.set $end (i32.add (local.get $p) (i32.shl (local.get $cols) (i32.const 2))))
        (local.set $end4 (i32.add (local.get $p) (i32.shl (i32.and (local.get $cols) (i32.const -4)) (i32.const 2))))
        (local.set $m (i32x4.splat (i32.const 0)))
        (block $vDone
          (loop $vLoop
            (br_if $vDone (i32.ge_u (local.get $p) (local.get $end4)))
            (local.set $a (v128.and (v128.load (local.get $p)) (local.get $abs)))
            (local.set $m (i32x4.max_u (local.get $m)
              (v128.and (local.get $a) (i32x4.le_u (local.get $a) (local.get $inf)))))
            (local.set $p (i32.add (local.get $p) (i32.const 16)))
            (br $vLoop)))
        (local.set $s (i32x4.extract_lane 0 (local.get $m)))
        (local.set $t (i32x4.extract_lane 1 (local.get $m)))
        (local.set $s (select (local.get $s) (local.get $t) (i32.gt_u (local.get $s) (local.get $t))))
        (local.set $t (i32x4.extract_lane 2 (local.get $m)))
        (local.set $s (select (local.get $s) (local.get $t) (i32.gt_u (local.get $s) (local.get $t))))
        (local.set $t (i32x4.extract_lane 3 (local.get $m)))
        (local.set $s (select (local.get $s) (local.get $t) (i32.gt_u (local.get $s) (local.get $t))))
        (block $sDone
          (loop $sLoop
            (br_if $sDone (i32.ge_u (local.get $p) (local.get $end)))
            (local.set $t (i32.and (i32.load (local.get $p)) (i32.const 0x7fffffff)))
            (if (i32.le_u (local.get $t) (i32.const 0x7f800000))
              (then (local.set $s (select (local.get $s) (local.get $t) (i32.gt_u (local.get $s) (local.get $t))))))
            (local.set $p (i32.add (local.get $p) (i32.const 4)))
            (br $sLoop)))
        (i32.store (i32.add (local.get $out) (i32.shl (local.get $r) (i32.const 2))) (local.get $s))
        (local.set $r (i32.add (local.get $r) (i32.const 1)))
        (br $rowLoop))))
)

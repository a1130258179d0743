;; baseline.wat: the IEEE baselines' chains (baseline.Dot, baseline.go) as
;; hand-written WebAssembly, for the js/wasm build (see package
;; internal/wasmk), where Go's own code for them, FMA32's TwoSum and
;; Nextafter through calls, costs about twice its amd64 code. The same
;; float32 and float64 operations in the same order as the Go code, each
;; rounded to nearest even on its own (WebAssembly has no fused
;; multiply-add, and the Go code converts after every operation):
;;
;;   kind 0 fp32:     s = f32(s + f32(va*vb))
;;   kind 1 fp32.fma: s = FMA32(va, vb, s): r = f64(va)*f64(vb) + f64(s);
;;                    r rounded to odd through TwoSum's exact error (its
;;                    neighbour toward the error when r is even and the
;;                    error not zero, as math.Nextafter), then to f32;
;;                    an inf or NaN r demoted as it is
;;   kind 2 fp64:     s = s + f64(va)*f64(vb) from f64(c), f32 at the end
;;   kind 3 kahan:    y = f32(f32(va*vb) - comp), t = f32(s + y),
;;                    comp = f32(f32(t - s) - y), s = t
;;   kind 4 pairwise: c + the tree that halves n into n/2 and n - n/2,
;;                    its subtrees of 2, 3 and 4 products written as the
;;                    Go code writes them: p0 + p1, p0 + (p1 + p2),
;;                    (p0 + p1) + (p2 + p3)
;;
;; with va = val[a[k]], vb = val[b[k]] (float32 values of the codes). A
;; NaN result may differ from the Go code's in its sign and payload:
;; WebAssembly leaves those open, and Go's own WebAssembly and amd64 code
;; differ there too.
;;
;; rows(P): P is the address of 9 u32 words:
;;   0 kind   1 val (f32[65536])   2 a (u16[n])   3 b (u16, row r at
;;   b + 2*r*stride)   4 stride (elements)   5 rows   6 n
;;   7 c (f32 per row; 0: every row from +0)   8 out (f32 per row)
(module
  (import "env" "mem" (memory 0))

  ;; pairwise(val, a, b, n): baseline.pairwise.
  (func $pairwise (param $val i32) (param $a i32) (param $b i32) (param $n i32) (result f32)
    (local $h i32)
    (if (i32.le_u (local.get $n) (i32.const 4))
      (then
        (if (i32.eqz (local.get $n)) (then (return (f32.const 0))))
        (if (i32.eq (local.get $n) (i32.const 1))
          (then (return (f32.mul (f32.load (i32.add (local.get $val) (i32.shl (i32.load16_u offset=0 (local.get $a)) (i32.const 2)))) (f32.load (i32.add (local.get $val) (i32.shl (i32.load16_u offset=0 (local.get $b)) (i32.const 2))))))))
        (if (i32.eq (local.get $n) (i32.const 2))
          (then (return (f32.add
            (f32.mul (f32.load (i32.add (local.get $val) (i32.shl (i32.load16_u offset=0 (local.get $a)) (i32.const 2)))) (f32.load (i32.add (local.get $val) (i32.shl (i32.load16_u offset=0 (local.get $b)) (i32.const 2)))))
            (f32.mul (f32.load (i32.add (local.get $val) (i32.shl (i32.load16_u offset=2 (local.get $a)) (i32.const 2)))) (f32.load (i32.add (local.get $val) (i32.shl (i32.load16_u offset=2 (local.get $b)) (i32.const 2)))))))))
        (if (i32.eq (local.get $n) (i32.const 3))
          (then (return (f32.add
            (f32.mul (f32.load (i32.add (local.get $val) (i32.shl (i32.load16_u offset=0 (local.get $a)) (i32.const 2)))) (f32.load (i32.add (local.get $val) (i32.shl (i32.load16_u offset=0 (local.get $b)) (i32.const 2)))))
            (f32.add
              (f32.mul (f32.load (i32.add (local.get $val) (i32.shl (i32.load16_u offset=2 (local.get $a)) (i32.const 2)))) (f32.load (i32.add (local.get $val) (i32.shl (i32.load16_u offset=2 (local.get $b)) (i32.const 2)))))
              (f32.mul (f32.load (i32.add (local.get $val) (i32.shl (i32.load16_u offset=4 (local.get $a)) (i32.const 2)))) (f32.load (i32.add (local.get $val) (i32.shl (i32.load16_u offset=4 (local.get $b)) (i32.const 2))))))))))
        (return (f32.add
          (f32.add
            (f32.mul (f32.load (i32.add (local.get $val) (i32.shl (i32.load16_u offset=0 (local.get $a)) (i32.const 2)))) (f32.load (i32.add (local.get $val) (i32.shl (i32.load16_u offset=0 (local.get $b)) (i32.const 2)))))
            (f32.mul (f32.load (i32.add (local.get $val) (i32.shl (i32.load16_u offset=2 (local.get $a)) (i32.const 2)))) (f32.load (i32.add (local.get $val) (i32.shl (i32.load16_u offset=2 (local.get $b)) (i32.const 2))))))
          (f32.add
            (f32.mul (f32.load (i32.add (local.get $val) (i32.shl (i32.load16_u offset=4 (local.get $a)) (i32.const 2)))) (f32.load (i32.add (local.get $val) (i32.shl (i32.load16_u offset=4 (local.get $b)) (i32.const 2)))))
            (f32.mul (f32.load (i32.add (local.get $val) (i32.shl (i32.load16_u offset=6 (local.get $a)) (i32.const 2)))) (f32.load (i32.add (local.get $val) (i32.shl (i32.load16_u offset=6 (local.get $b)) (i32.const 2))))))))))
    (local.set $h (i32.shr_u (local.get $n) (i32.const 1)))
    (f32.add
      (call $pairwise (local.get $val) (local.get $a) (local.get $b) (local.get $h))
      (call $pairwise (local.get $val)
        (i32.add (local.get $a) (i32.shl (local.get $h) (i32.const 1)))
        (i32.add (local.get $b) (i32.shl (local.get $h) (i32.const 1)))
        (i32.sub (local.get $n) (local.get $h)))))

  ;; In the fp32.fma loop below (FMA32, baseline.go; r is $fr there): an
  ;; inf or NaN r (|r| not below the largest finite float64; NaN compares false) is
  ;; demoted as it is; otherwise TwoSum's error e, and where e is not zero
  ;; and r even, math.Nextafter(r, ±inf toward e): from 0 the smallest
  ;; subnormal of e's sign, else one ulp up in magnitude when e and r have
  ;; the same sign, down otherwise.
  (func $rows (export "rows") (param $P i32)
    (local $kind i32) (local $val i32) (local $a i32) (local $b i32) (local $stride2 i32) (local $rows i32) (local $n i32)
    (local $cp i32) (local $out i32) (local $r i32) (local $k i32) (local $c f32)
    (local $s f32) (local $d f64) (local $y f32) (local $t f32) (local $comp f32)
    (local $p f64) (local $fr f64) (local $bv f64) (local $e f64) (local $bits i64)
    (local.set $kind (i32.load offset=0 (local.get $P)))
    (local.set $val (i32.load offset=4 (local.get $P)))
    (local.set $a (i32.load offset=8 (local.get $P)))
    (local.set $b (i32.load offset=12 (local.get $P)))
    (local.set $stride2 (i32.shl (i32.load offset=16 (local.get $P)) (i32.const 1)))
    (local.set $rows (i32.load offset=20 (local.get $P)))
    (local.set $n (i32.load offset=24 (local.get $P)))
    (local.set $cp (i32.load offset=28 (local.get $P)))
    (local.set $out (i32.load offset=32 (local.get $P)))
    (block $rowsDone
      (loop $rowLoop
        (br_if $rowsDone (i32.ge_u (local.get $r) (local.get $rows)))
        (local.set $c (f32.const 0))
        (if (local.get $cp)
          (then (local.set $c (f32.load (i32.add (local.get $cp) (i32.shl (local.get $r) (i32.const 2)))))))
        (local.set $s (local.get $c))
        (local.set $k (i32.const 0))
        (block $kinds
          (block $pw (block $kh (block $f64 (block $fma (block $f32
            (br_table $f32 $fma $f64 $kh $pw $kinds (local.get $kind)))
            ;; fp32
            (block $e (loop $l
              (br_if $e (i32.ge_u (local.get $k) (local.get $n)))
              (local.set $s (f32.add (local.get $s) (f32.mul
  (f32.load (i32.add (local.get $val) (i32.shl (i32.load16_u (i32.add (local.get $a) (i32.shl (local.get $k) (i32.const 1)))) (i32.const 2))))
  (f32.load (i32.add (local.get $val) (i32.shl (i32.load16_u (i32.add (local.get $b) (i32.shl (local.get $k) (i32.const 1)))) (i32.const 2)))))))
              (local.set $k (i32.add (local.get $k) (i32.const 1)))
              (br $l)))
            (br $kinds))
            ;; fp32.fma
            (block $e (loop $l
              (br_if $e (i32.ge_u (local.get $k) (local.get $n)))
              ;; FMA32, written out (a call per element costs a third of
              ;; the chain under node): p = va*vb, exact in float64.
              (local.set $p (f64.mul
                (f64.promote_f32 (f32.load (i32.add (local.get $val) (i32.shl (i32.load16_u (i32.add (local.get $a) (i32.shl (local.get $k) (i32.const 1)))) (i32.const 2)))))
                (f64.promote_f32 (f32.load (i32.add (local.get $val) (i32.shl (i32.load16_u (i32.add (local.get $b) (i32.shl (local.get $k) (i32.const 1)))) (i32.const 2)))))))
              (local.set $d (f64.promote_f32 (local.get $s)))
              (local.set $fr (f64.add (local.get $p) (local.get $d)))
              (if (f64.le (f64.abs (local.get $fr)) (f64.const 0x1.fffffffffffffp+1023))
                (then
                  (local.set $bv (f64.sub (local.get $fr) (local.get $p)))
                  (local.set $e (f64.add
                    (f64.sub (local.get $p) (f64.sub (local.get $fr) (local.get $bv)))
                    (f64.sub (local.get $d) (local.get $bv))))
                  (local.set $bits (i64.reinterpret_f64 (local.get $fr)))
                  (if (i32.and (f64.ne (local.get $e) (f64.const 0)) (i64.eqz (i64.and (local.get $bits) (i64.const 1))))
                    (then
                      (local.set $fr (f64.reinterpret_i64
                        (if (result i64) (f64.eq (local.get $fr) (f64.const 0))
                          (then (i64.or (i64.const 1) (i64.and (i64.reinterpret_f64 (local.get $e)) (i64.const 0x8000000000000000))))
                          (else
                            (if (result i64) (i32.eq (f64.gt (local.get $e) (f64.const 0)) (f64.gt (local.get $fr) (f64.const 0)))
                              (then (i64.add (local.get $bits) (i64.const 1)))
                              (else (i64.sub (local.get $bits) (i64.const 1))))))))))))
              (local.set $s (f32.demote_f64 (local.get $fr)))
              (local.set $k (i32.add (local.get $k) (i32.const 1)))
              (br $l)))
            (br $kinds))
            ;; fp64
            (local.set $d (f64.promote_f32 (local.get $c)))
            (block $e (loop $l
              (br_if $e (i32.ge_u (local.get $k) (local.get $n)))
              (local.set $d (f64.add (local.get $d) (f64.mul
                (f64.promote_f32 (f32.load (i32.add (local.get $val) (i32.shl (i32.load16_u (i32.add (local.get $a) (i32.shl (local.get $k) (i32.const 1)))) (i32.const 2)))))
                (f64.promote_f32 (f32.load (i32.add (local.get $val) (i32.shl (i32.load16_u (i32.add (local.get $b) (i32.shl (local.get $k) (i32.const 1)))) (i32.const 2))))))))
              (local.set $k (i32.add (local.get $k) (i32.const 1)))
              (br $l)))
            (local.set $s (f32.demote_f64 (local.get $d)))
            (br $kinds))
          ;; kahan
          (local.set $comp (f32.const 0))
          (block $e (loop $l
            (br_if $e (i32.ge_u (local.get $k) (local.get $n)))
            (local.set $y (f32.sub (f32.mul
  (f32.load (i32.add (local.get $val) (i32.shl (i32.load16_u (i32.add (local.get $a) (i32.shl (local.get $k) (i32.const 1)))) (i32.const 2))))
  (f32.load (i32.add (local.get $val) (i32.shl (i32.load16_u (i32.add (local.get $b) (i32.shl (local.get $k) (i32.const 1)))) (i32.const 2))))) (local.get $comp)))
            (local.set $t (f32.add (local.get $s) (local.get $y)))
            (local.set $comp (f32.sub (f32.sub (local.get $t) (local.get $s)) (local.get $y)))
            (local.set $s (local.get $t))
            (local.set $k (i32.add (local.get $k) (i32.const 1)))
            (br $l)))
          (br $kinds))
          ;; pairwise
          (local.set $s (f32.add (local.get $c) (call $pairwise (local.get $val) (local.get $a) (local.get $b) (local.get $n)))))
        (f32.store (i32.add (local.get $out) (i32.shl (local.get $r) (i32.const 2))) (local.get $s))
        (local.set $b (i32.add (local.get $b) (local.get $stride2)))
        (local.set $r (i32.add (local.get $r) (i32.const 1)))
        (br $rowLoop))))
)

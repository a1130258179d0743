;; chain.wat: the T-FDPA chain of accum's pure-Go step (tableStep's
;; stepPreparedInt, rows.go) as hand-written WebAssembly, for the js/wasm
;; build, where Go's own WebAssembly code for the same loop is 2-3x slower
;; than its amd64 code (BENCHMARKS.md, "The browser against one native
;; core"). The same operations in the same order, so the same bits:
;;
;;   emax  = max over the step of expA[k] + exp[b[k]]   (i32; -2000 to start;
;;           exp[x] and val[x] read from one gathered entry)
;;   stop if emax > 1000 (a NaN or inf among the inputs) or c is NaN or inf
;;   emax  = max(emax, cExponent(c))
;;   scale = 2^(F - emax) as the float64 whose bits are (1023+F-emax) << 52
;;   sum   = i64(f64(c)*scale) + sum over k of i64((valA[k]*val[b[k]])*scale)
;;   c     = 0 if sum == 0, else sign | roundRZ(|sum|, emax - F, fb)
;;
;; Every float64 operation is IEEE round to nearest even in WebAssembly (no
;; fused multiply-add), as in Go; the truncations are in range (|term| <
;; 2^(F+2)), so i64.trunc_f64_s never traps.
;;
;; The module imports the Go program's own linear memory (env.mem) and
;; reads and writes the Go slices in place; internal/wasmk instantiates it
;; and accum/chain_wasm.go passes the addresses.
;;
;; dotrows(P): P is the address of 16 u32 words:
;;   0 entry table (u64[65536]: a code's value as float64 bits, its exponent
;;     in the low 32 bits, which no value uses: accum's packEntries)
;;   1 scratch (u64[L]: the step's entries, gathered once)
;;   2 expA (i32[n], written here)   3 valA (f64[n], written here)
;;   4 b (u16, row r at b + 2*r*stride)   5 stride (elements)
;;   6 rows   7 n   8 L   9 F   10 fb   11 ezero
;;   12 c (f32 bits per row; 0: every chain starts from +0)
;;   13 out (f32 bits per row)   14 done (i32 per row)
;;   15 a (u16[n]: the codes whose exponents and values go to expA and valA)
;; For each row it runs the whole steps of L elements from c[r] while no
;; step holds a special, and writes the chain's value to out[r] and the
;; number of elements it consumed to done[r]: n when it ran them all, less
;; when a step holds a NaN or inf or a partial step is left (the caller
;; runs the rest in Go).
(module
  (import "env" "mem" (memory 0))

  (func $dotrows (export "dotrows") (param $P i32)
    (local $entT i32) (local $scr i32) (local $sp i32) (local $hiMask v128) (local $expA i32) (local $valA i32)
    (local $b i32) (local $stride2 i32) (local $rows i32) (local $n i32) (local $L i32)
    (local $F i32) (local $fb i32) (local $ezero i32) (local $cp i32) (local $out i32) (local $done i32)
    (local $r i32) (local $row i32) (local $i i32) (local $k i32) (local $end i32)
    (local $cr i32) (local $emax i32) (local $e0 i32) (local $e1 i32) (local $cexp i32) (local $ce i32)
    (local $bp i32) (local $ap i32) (local $scale f64) (local $s0 i64)
    (local $vmax v128) (local $ve v128) (local $vb v128) (local $vscale v128) (local $acc0 v128) (local $acc1 v128)
    (local.set $entT (i32.load offset=0 (local.get $P)))
    (local.set $scr (i32.load offset=4 (local.get $P)))
    (local.set $hiMask (i64x2.splat (i64.const 0xffffffff00000000)))
    (local.set $expA (i32.load offset=8 (local.get $P)))
    (local.set $valA (i32.load offset=12 (local.get $P)))
    (local.set $b (i32.load offset=16 (local.get $P)))
    (local.set $stride2 (i32.shl (i32.load offset=20 (local.get $P)) (i32.const 1)))
    (local.set $rows (i32.load offset=24 (local.get $P)))
    (local.set $n (i32.load offset=28 (local.get $P)))
    (local.set $L (i32.load offset=32 (local.get $P)))
    (local.set $F (i32.load offset=36 (local.get $P)))
    (local.set $fb (i32.load offset=40 (local.get $P)))
    (local.set $ezero (i32.load offset=44 (local.get $P)))
    (local.set $cp (i32.load offset=48 (local.get $P)))
    (local.set $out (i32.load offset=52 (local.get $P)))
    (local.set $done (i32.load offset=56 (local.get $P)))
    ;; a's exponents and values from its codes (a at word 15), once for
    ;; every row: the entry's low 32 bits and the rest.
    (local.set $ap (i32.load offset=60 (local.get $P)))
    (local.set $k (i32.const 0))
    (block $aDone
      (loop $aLoop
        (br_if $aDone (i32.ge_u (local.get $k) (local.get $n)))
        (local.set $s0 (i64.load (i32.add (local.get $entT) (i32.shl (i32.load16_u (i32.add (local.get $ap) (i32.shl (local.get $k) (i32.const 1)))) (i32.const 3)))))
        (i32.store (i32.add (local.get $expA) (i32.shl (local.get $k) (i32.const 2))) (i32.wrap_i64 (local.get $s0)))
        (i64.store (i32.add (local.get $valA) (i32.shl (local.get $k) (i32.const 3))) (i64.and (local.get $s0) (i64.const 0xffffffff00000000)))
        (local.set $k (i32.add (local.get $k) (i32.const 1)))
        (br $aLoop)))
    (local.set $row (local.get $b))
    (block $rowsDone
      (loop $rowLoop
        (br_if $rowsDone (i32.ge_u (local.get $r) (local.get $rows)))
        (local.set $cr (i32.const 0))
        (if (local.get $cp)
          (then (local.set $cr (i32.load (i32.add (local.get $cp) (i32.shl (local.get $r) (i32.const 2)))))))
        (local.set $i (i32.const 0))
        (block $stepsDone
          (loop $stepLoop
            (local.set $end (i32.add (local.get $i) (local.get $L)))
            (br_if $stepsDone (i32.gt_u (local.get $end) (local.get $n)))
;; The largest product exponent: four lanes, four elements a round
            ;; (L is a multiple of 4).
            (local.set $vmax (i32x4.splat (i32.const -2000)))
            (local.set $k (local.get $i))
            (local.set $sp (local.get $scr))
            (loop $eLoop
              ;; Four entries (the value's float64 bits, the exponent in
              ;; the low 32) gathered once: their exponents to the maxima,
              ;; the entries to the scratch for the sum.
              (local.set $bp (i32.add (local.get $row) (i32.shl (local.get $k) (i32.const 1))))
              (local.set $ve (v128.load64_zero (i32.add (local.get $entT) (i32.shl (i32.load16_u (local.get $bp)) (i32.const 3)))))
              (local.set $ve (v128.load64_lane 1 (i32.add (local.get $entT) (i32.shl (i32.load16_u offset=2 (local.get $bp)) (i32.const 3))) (local.get $ve)))
              (local.set $vb (v128.load64_zero (i32.add (local.get $entT) (i32.shl (i32.load16_u offset=4 (local.get $bp)) (i32.const 3)))))
              (local.set $vb (v128.load64_lane 1 (i32.add (local.get $entT) (i32.shl (i32.load16_u offset=6 (local.get $bp)) (i32.const 3))) (local.get $vb)))
              (v128.store (local.get $sp) (local.get $ve))
              (v128.store offset=16 (local.get $sp) (local.get $vb))
              (local.set $vmax (i32x4.max_s (local.get $vmax)
                (i32x4.add
                  (i8x16.shuffle 0 1 2 3 8 9 10 11 16 17 18 19 24 25 26 27 (local.get $ve) (local.get $vb))
                  (v128.load (i32.add (local.get $expA) (i32.shl (local.get $k) (i32.const 2)))))))
              (local.set $sp (i32.add (local.get $sp) (i32.const 32)))
              (local.set $k (i32.add (local.get $k) (i32.const 4)))
              (br_if $eLoop (i32.lt_u (local.get $k) (local.get $end))))
            (local.set $e0 (i32x4.extract_lane 0 (local.get $vmax)))
            (local.set $e1 (i32x4.extract_lane 1 (local.get $vmax)))
            (local.set $e0 (select (local.get $e0) (local.get $e1) (i32.gt_s (local.get $e0) (local.get $e1))))
            (local.set $e1 (i32x4.extract_lane 2 (local.get $vmax)))
            (local.set $e0 (select (local.get $e0) (local.get $e1) (i32.gt_s (local.get $e0) (local.get $e1))))
            (local.set $e1 (i32x4.extract_lane 3 (local.get $vmax)))
            (local.set $emax (select (local.get $e0) (local.get $e1) (i32.gt_s (local.get $e0) (local.get $e1))))
            (br_if $stepsDone (i32.gt_s (local.get $emax) (i32.const 1000)))
            ;; cExponent(c): NaN or inf stops the chain.
            (local.set $cexp (i32.and (i32.shr_u (local.get $cr) (i32.const 23)) (i32.const 0xff)))
            (br_if $stepsDone (i32.eq (local.get $cexp) (i32.const 0xff)))
            (local.set $ce
              (if (result i32) (i32.eqz (i32.and (local.get $cr) (i32.const 0x7fffffff)))
                (then (local.get $ezero))
                (else
                  (if (result i32) (i32.eqz (local.get $cexp))
                    (then (i32.const -126))
                    (else (i32.sub (local.get $cexp) (i32.const 127)))))))
            (local.set $emax (select (local.get $ce) (local.get $emax) (i32.gt_s (local.get $ce) (local.get $emax))))
            (local.set $scale (f64.reinterpret_i64
              (i64.shl (i64.extend_i32_s (i32.sub (i32.add (i32.const 1023) (local.get $F)) (local.get $emax))) (i64.const 52))))
            (local.set $vscale (f64x2.splat (local.get $scale)))
            ;; The aligned, truncated terms trunc((valA[k]*val[b[k]])*scale):
            ;; integers below 2^(F+2) <= 2^27 in magnitude, at most 64 of
            ;; them (L <= 64) and c's below 2^(F+1), so every float64
            ;; partial sum is exact, in any order: the integer sum.
            (local.set $acc0 (f64x2.splat (f64.const 0)))
            (local.set $acc1 (f64x2.splat (f64.const 0)))
            (local.set $k (local.get $i))
            (local.set $sp (local.get $scr))
            (loop $sLoop
              ;; The values: the scratch's entries without their low 32 bits.
              (local.set $ap (i32.add (local.get $valA) (i32.shl (local.get $k) (i32.const 3))))
              (local.set $acc0 (f64x2.add (local.get $acc0)
                (f64x2.trunc (f64x2.mul (f64x2.mul (v128.load (local.get $ap))
                  (v128.and (v128.load (local.get $sp)) (local.get $hiMask))) (local.get $vscale)))))
              (local.set $acc1 (f64x2.add (local.get $acc1)
                (f64x2.trunc (f64x2.mul (f64x2.mul (v128.load offset=16 (local.get $ap))
                  (v128.and (v128.load offset=16 (local.get $sp)) (local.get $hiMask))) (local.get $vscale)))))
              (local.set $sp (i32.add (local.get $sp) (i32.const 32)))
              (local.set $k (i32.add (local.get $k) (i32.const 4)))
              (br_if $sLoop (i32.lt_u (local.get $k) (local.get $end))))
            (local.set $acc0 (f64x2.add (local.get $acc0) (local.get $acc1)))
            (local.set $s0 (i64.trunc_f64_s (f64.add
              (f64.trunc (f64.mul (f64.promote_f32 (f32.reinterpret_i32 (local.get $cr))) (local.get $scale)))
              (f64.add (f64x2.extract_lane 0 (local.get $acc0)) (f64x2.extract_lane 1 (local.get $acc0))))))
            (local.set $cr (call $round (local.get $s0) (local.get $emax) (local.get $F) (local.get $fb)))
            (local.set $i (local.get $end))
            (br $stepLoop)))
        (i32.store (i32.add (local.get $out) (i32.shl (local.get $r) (i32.const 2))) (local.get $cr))
        (i32.store (i32.add (local.get $done) (i32.shl (local.get $r) (i32.const 2))) (local.get $i))
        (local.set $row (i32.add (local.get $row) (local.get $stride2)))
        (local.set $r (i32.add (local.get $r) (i32.const 1)))
        (br $rowLoop))))

;; emurows(P): the emulated mma.sync (models.go's mmaSyncEmu with an FP32
  ;; accumulator: dotAsm's instructions) for every row: an instruction is 32
  ;; elements, two 16-element steps, its elements with k mod 4 in {0, 1}
  ;; (lo) from +0 and then those in {2, 3} (hi) from lo's result t, and the
  ;; row's accumulator becomes f32(c + t') (IEEE add, as Step's float32(c +
  ;; t)). A step's result is that of its set of products (their largest
  ;; exponent and the exact sum of their aligned, truncated terms), so the
  ;; elements are taken in place. P as dotrows's (word 8 unused); done[r]
  ;; is the start of the first instruction not run: one holding a NaN or
  ;; inf, whose lo step gives an inf, or a partial one at the end (the
  ;; caller runs those with Step).
  (func $emurows (export "emurows") (param $P i32)
    (local $entT i32) (local $scr i32) (local $sp i32) (local $hiMask v128) (local $expA i32) (local $valA i32)
    (local $b i32) (local $stride2 i32) (local $rows i32) (local $n i32)
    (local $F i32) (local $fb i32) (local $ezero i32) (local $cp i32) (local $out i32) (local $done i32)
    (local $r i32) (local $row i32) (local $i i32) (local $k i32) (local $end i32)
    (local $cr i32) (local $t i32) (local $eLo i32) (local $eHi i32) (local $e1 i32) (local $cexp i32) (local $ce i32)
    (local $bp i32) (local $ap i32) (local $scale f64) (local $s0 i64)
    (local $vmax v128) (local $ve v128) (local $vb v128) (local $vscale v128) (local $acc0 v128)
    (local.set $entT (i32.load offset=0 (local.get $P)))
    (local.set $scr (i32.load offset=4 (local.get $P)))
    (local.set $hiMask (i64x2.splat (i64.const 0xffffffff00000000)))
    (local.set $expA (i32.load offset=8 (local.get $P)))
    (local.set $valA (i32.load offset=12 (local.get $P)))
    (local.set $b (i32.load offset=16 (local.get $P)))
    (local.set $stride2 (i32.shl (i32.load offset=20 (local.get $P)) (i32.const 1)))
    (local.set $rows (i32.load offset=24 (local.get $P)))
    (local.set $n (i32.load offset=28 (local.get $P)))
    (local.set $F (i32.load offset=36 (local.get $P)))
    (local.set $fb (i32.load offset=40 (local.get $P)))
    (local.set $ezero (i32.load offset=44 (local.get $P)))
    (local.set $cp (i32.load offset=48 (local.get $P)))
    (local.set $out (i32.load offset=52 (local.get $P)))
    (local.set $done (i32.load offset=56 (local.get $P)))
    ;; a's exponents and values from its codes, as dotrows.
    (local.set $ap (i32.load offset=60 (local.get $P)))
    (block $aDone
      (loop $aLoop
        (br_if $aDone (i32.ge_u (local.get $k) (local.get $n)))
        (local.set $s0 (i64.load (i32.add (local.get $entT) (i32.shl (i32.load16_u (i32.add (local.get $ap) (i32.shl (local.get $k) (i32.const 1)))) (i32.const 3)))))
        (i32.store (i32.add (local.get $expA) (i32.shl (local.get $k) (i32.const 2))) (i32.wrap_i64 (local.get $s0)))
        (i64.store (i32.add (local.get $valA) (i32.shl (local.get $k) (i32.const 3))) (i64.and (local.get $s0) (i64.const 0xffffffff00000000)))
        (local.set $k (i32.add (local.get $k) (i32.const 1)))
        (br $aLoop)))
    (local.set $row (local.get $b))
    (block $rowsDone
      (loop $rowLoop
        (br_if $rowsDone (i32.ge_u (local.get $r) (local.get $rows)))
        (local.set $cr (i32.const 0))
        (if (local.get $cp)
          (then (local.set $cr (i32.load (i32.add (local.get $cp) (i32.shl (local.get $r) (i32.const 2)))))))
        (local.set $i (i32.const 0))
        (block $instrDone
          (loop $instrLoop
            (local.set $end (i32.add (local.get $i) (i32.const 32)))
            (br_if $instrDone (i32.gt_u (local.get $end) (local.get $n)))
            ;; The exponents: four elements a round, lanes 0 and 1 lo's,
            ;; 2 and 3 hi's; the entries to the scratch, lo's at scr,
            ;; hi's at scr + 128.
            (local.set $vmax (i32x4.splat (i32.const -2000)))
            (local.set $k (local.get $i))
            (local.set $sp (local.get $scr))
            (loop $eLoop
              (local.set $bp (i32.add (local.get $row) (i32.shl (local.get $k) (i32.const 1))))
              (local.set $ve (v128.load64_zero (i32.add (local.get $entT) (i32.shl (i32.load16_u (local.get $bp)) (i32.const 3)))))
              (local.set $ve (v128.load64_lane 1 (i32.add (local.get $entT) (i32.shl (i32.load16_u offset=2 (local.get $bp)) (i32.const 3))) (local.get $ve)))
              (local.set $vb (v128.load64_zero (i32.add (local.get $entT) (i32.shl (i32.load16_u offset=4 (local.get $bp)) (i32.const 3)))))
              (local.set $vb (v128.load64_lane 1 (i32.add (local.get $entT) (i32.shl (i32.load16_u offset=6 (local.get $bp)) (i32.const 3))) (local.get $vb)))
              (v128.store (local.get $sp) (local.get $ve))
              (v128.store offset=128 (local.get $sp) (local.get $vb))
              (local.set $vmax (i32x4.max_s (local.get $vmax)
                (i32x4.add
                  (i8x16.shuffle 0 1 2 3 8 9 10 11 16 17 18 19 24 25 26 27 (local.get $ve) (local.get $vb))
                  (v128.load (i32.add (local.get $expA) (i32.shl (local.get $k) (i32.const 2)))))))
              (local.set $sp (i32.add (local.get $sp) (i32.const 16)))
              (local.set $k (i32.add (local.get $k) (i32.const 4)))
              (br_if $eLoop (i32.lt_u (local.get $k) (local.get $end))))
            (local.set $eLo (i32x4.extract_lane 0 (local.get $vmax)))
            (local.set $e1 (i32x4.extract_lane 1 (local.get $vmax)))
            (local.set $eLo (select (local.get $eLo) (local.get $e1) (i32.gt_s (local.get $eLo) (local.get $e1))))
            (local.set $eHi (i32x4.extract_lane 2 (local.get $vmax)))
            (local.set $e1 (i32x4.extract_lane 3 (local.get $vmax)))
            (local.set $eHi (select (local.get $eHi) (local.get $e1) (i32.gt_s (local.get $eHi) (local.get $e1))))
            (br_if $instrDone (i32.gt_s (local.get $eLo) (i32.const 1000)))
            (br_if $instrDone (i32.gt_s (local.get $eHi) (i32.const 1000)))
            ;; lo from +0: c's exponent is ezero, its term 0.
            (local.set $eLo (select (local.get $ezero) (local.get $eLo) (i32.gt_s (local.get $ezero) (local.get $eLo))))
            (local.set $scale (f64.reinterpret_i64
              (i64.shl (i64.extend_i32_s (i32.sub (i32.add (i32.const 1023) (local.get $F)) (local.get $eLo))) (i64.const 52))))
            (local.set $vscale (f64x2.splat (local.get $scale)))
            (local.set $acc0 (f64x2.splat (f64.const 0)))
            (local.set $k (local.get $i))
            (local.set $sp (local.get $scr))
            (loop $loLoop
              (local.set $acc0 (f64x2.add (local.get $acc0)
                (f64x2.trunc (f64x2.mul (f64x2.mul (v128.load (i32.add (local.get $valA) (i32.shl (local.get $k) (i32.const 3))))
                  (v128.and (v128.load (local.get $sp)) (local.get $hiMask))) (local.get $vscale)))))
              (local.set $sp (i32.add (local.get $sp) (i32.const 16)))
              (local.set $k (i32.add (local.get $k) (i32.const 4)))
              (br_if $loLoop (i32.lt_u (local.get $k) (local.get $end))))
            (local.set $s0 (i64.trunc_f64_s (f64.add
              (f64.trunc (f64.mul (f64.const 0) (local.get $scale)))
              (f64.add (f64x2.extract_lane 0 (local.get $acc0)) (f64x2.extract_lane 1 (local.get $acc0))))))
            (local.set $t (call $round (local.get $s0) (local.get $eLo) (local.get $F) (local.get $fb)))
            ;; hi from t: cExponent(t) (an inf t stops, as chainGG does).
            (local.set $cexp (i32.and (i32.shr_u (local.get $t) (i32.const 23)) (i32.const 0xff)))
            (br_if $instrDone (i32.eq (local.get $cexp) (i32.const 0xff)))
            (local.set $ce
              (if (result i32) (i32.eqz (i32.and (local.get $t) (i32.const 0x7fffffff)))
                (then (local.get $ezero))
                (else
                  (if (result i32) (i32.eqz (local.get $cexp))
                    (then (i32.const -126))
                    (else (i32.sub (local.get $cexp) (i32.const 127)))))))
            (local.set $eHi (select (local.get $ce) (local.get $eHi) (i32.gt_s (local.get $ce) (local.get $eHi))))
            (local.set $scale (f64.reinterpret_i64
              (i64.shl (i64.extend_i32_s (i32.sub (i32.add (i32.const 1023) (local.get $F)) (local.get $eHi))) (i64.const 52))))
            (local.set $vscale (f64x2.splat (local.get $scale)))
            (local.set $acc0 (f64x2.splat (f64.const 0)))
            (local.set $k (i32.add (local.get $i) (i32.const 2)))
            (local.set $sp (i32.add (local.get $scr) (i32.const 128)))
            (loop $hiLoop
              (local.set $acc0 (f64x2.add (local.get $acc0)
                (f64x2.trunc (f64x2.mul (f64x2.mul (v128.load (i32.add (local.get $valA) (i32.shl (local.get $k) (i32.const 3))))
                  (v128.and (v128.load (local.get $sp)) (local.get $hiMask))) (local.get $vscale)))))
              (local.set $sp (i32.add (local.get $sp) (i32.const 16)))
              (local.set $k (i32.add (local.get $k) (i32.const 4)))
              (br_if $hiLoop (i32.lt_u (local.get $k) (local.get $end))))
            (local.set $s0 (i64.trunc_f64_s (f64.add
              (f64.trunc (f64.mul (f64.promote_f32 (f32.reinterpret_i32 (local.get $t))) (local.get $scale)))
              (f64.add (f64x2.extract_lane 0 (local.get $acc0)) (f64x2.extract_lane 1 (local.get $acc0))))))
            (local.set $t (call $round (local.get $s0) (local.get $eHi) (local.get $F) (local.get $fb)))
            (local.set $cr (i32.reinterpret_f32 (f32.add (f32.reinterpret_i32 (local.get $cr)) (f32.reinterpret_i32 (local.get $t)))))
            (local.set $i (local.get $end))
            (br $instrLoop)))
        (i32.store (i32.add (local.get $out) (i32.shl (local.get $r) (i32.const 2))) (local.get $cr))
        (i32.store (i32.add (local.get $done) (i32.shl (local.get $r) (i32.const 2))) (local.get $i))
        (local.set $row (i32.add (local.get $row) (local.get $stride2)))
        (local.set $r (i32.add (local.get $r) (i32.const 1)))
        (br $rowLoop))))

    ;; round(sum, emax, F, fb): a step's result as float32 bits: 0 for a zero
  ;; sum, else sign | roundRZ(|sum|, emax - F, fb) (step.go's roundRZ,
  ;; written out: e is the result's exponent, qe that of its last kept bit,
  ;; kk the shift that aligns it).
  (func $round (param $s0 i64) (param $emax i32) (param $F i32) (param $fb i32) (result i32)
    (local $res i32) (local $sign i32) (local $mag i64) (local $sx i32) (local $e i32) (local $qe i32) (local $kk i32)
    (if (i64.eqz (local.get $s0))
      (then (local.set $res (i32.const 0)))
      (else
        (local.set $sign (i32.wrap_i64 (i64.shr_u (i64.and (local.get $s0) (i64.const 0x8000000000000000)) (i64.const 32))))
        (local.set $mag (select (i64.sub (i64.const 0) (local.get $s0)) (local.get $s0) (i64.lt_s (local.get $s0) (i64.const 0))))
        (local.set $sx (i32.sub (local.get $emax) (local.get $F)))
        (local.set $e (i32.add (i32.sub (i32.const 63) (i32.wrap_i64 (i64.clz (local.get $mag)))) (local.get $sx)))
        (if (i32.ge_s (local.get $e) (i32.const 128))
          (then (local.set $res (i32.or (local.get $sign) (i32.const 0x7f800000))))
          (else
            (local.set $qe (i32.sub
              (select (local.get $e) (i32.const -126) (i32.gt_s (local.get $e) (i32.const -126)))
              (local.get $fb)))
            (local.set $kk (i32.sub (local.get $sx) (local.get $qe)))
            (if (i32.ge_s (local.get $kk) (i32.const 0))
              (then (local.set $mag (i64.shl (local.get $mag) (i64.extend_i32_u (local.get $kk)))))
              (else
                (local.set $mag (select
                  (i64.const 0)
                  (i64.shr_u (local.get $mag) (i64.extend_i32_u (i32.sub (i32.const 0) (local.get $kk))))
                  (i32.le_s (local.get $kk) (i32.const -64))))))
            (local.set $res (i32.or (local.get $sign)
              (if (result i32) (i32.ge_s (local.get $e) (i32.const -126))
                (then
                  (i32.or
                    (i32.shl (i32.add (local.get $e) (i32.const 127)) (i32.const 23))
                    (i32.shl
                      (i32.wrap_i64 (i64.sub (local.get $mag) (i64.shl (i64.const 1) (i64.extend_i32_u (local.get $fb)))))
                      (i32.sub (i32.const 23) (local.get $fb)))))
                (else (i32.shl (i32.wrap_i64 (local.get $mag)) (i32.sub (i32.const 23) (local.get $fb)))))))))))
    (local.get $res))
)

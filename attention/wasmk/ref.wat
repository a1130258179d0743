;; ref.wat: the float64 loops of attention's exact reference on the codes
;; (reference.go's dot4 and sum4) as hand-written WebAssembly with 128-bit
;; SIMD, for the js/wasm build (see accum/wasmk/chain.wat and package
;; internal/wasmk). Two lanes are two keys (dots4) or two output elements
;; (sum4): each lane's sum runs in the Go loop's order, with a separate
;; multiply and add (WebAssembly never fuses them, nor does Go here), so
;; every lane gives the Go loop's bits.
;;
;; dots4(P): P is the address of 8 u32 words:
;;   0 q (f64[d])   1 d   2 codes (u16; key t at codes + 2*t*stride)
;;   3 keys (a multiple of 4)   4 kt (f64 per code)   5 out (f64 per key)
;;   6 stride (codes per key)   7 unused
;; and, at P+32, scale (f64). out[t] = scale * sum over x in order of
;; q[x]*kt[code of key t at x].
;;
;; dotsf32(P): dots4 on float32 keys, each element converted to float64
;; exactly (reference.go's referenceRow on float32 keys, pmath.DotsF32x8's
;; loop): P as for dots4, with word 2 the keys (f32; key t at
;; keys + 4*t*stride) and word 4 unused.
;;
;; sum4(P): P is the address of 8 u32 words:
;;   0 w (f64[n])   1 n   2-5 r0..r3 (u16[n], four channels' codes)
;;   6 vt (f64 per code)   7 unused
;; and, at P+32, a0..a3 (f64, in and out): a_c += w[j]*vt[r_c[j]] for every
;; j in order whose w[j] is not -inf.
(module
  (import "env" "mem" (memory 0))

  (func $dots4 (export "dots4") (param $P i32)
    (local $q i32) (local $d i32) (local $codes i32) (local $keys i32) (local $kt i32) (local $out i32)
    (local $stride2 i32) (local $t i32) (local $x i32) (local $c0 i32) (local $c1 i32) (local $c2 i32) (local $c3 i32)
    (local $qx v128) (local $v v128) (local $acc01 v128) (local $acc23 v128) (local $scale v128)
    (local.set $q (i32.load offset=0 (local.get $P)))
    (local.set $d (i32.load offset=4 (local.get $P)))
    (local.set $codes (i32.load offset=8 (local.get $P)))
    (local.set $keys (i32.load offset=12 (local.get $P)))
    (local.set $kt (i32.load offset=16 (local.get $P)))
    (local.set $out (i32.load offset=20 (local.get $P)))
    (local.set $stride2 (i32.shl (i32.load offset=24 (local.get $P)) (i32.const 1)))
    (local.set $scale (f64x2.splat (f64.load offset=32 (local.get $P))))
    (block $done
      (loop $keyLoop
        (br_if $done (i32.ge_u (local.get $t) (local.get $keys)))
        (local.set $c0 (local.get $codes))
        (local.set $c1 (i32.add (local.get $c0) (local.get $stride2)))
        (local.set $c2 (i32.add (local.get $c1) (local.get $stride2)))
        (local.set $c3 (i32.add (local.get $c2) (local.get $stride2)))
        (local.set $acc01 (f64x2.splat (f64.const 0)))
        (local.set $acc23 (f64x2.splat (f64.const 0)))
        (local.set $x (i32.const 0))
        (block $xDone
          (loop $xLoop
            (br_if $xDone (i32.ge_u (local.get $x) (local.get $d)))
            (local.set $qx (v128.load64_splat (i32.add (local.get $q) (i32.shl (local.get $x) (i32.const 3)))))
            (local.set $v (v128.load64_zero (i32.add (local.get $kt) (i32.shl (i32.load16_u (local.get $c0)) (i32.const 3)))))
            (local.set $v (v128.load64_lane 1 (i32.add (local.get $kt) (i32.shl (i32.load16_u (local.get $c1)) (i32.const 3))) (local.get $v)))
            (local.set $acc01 (f64x2.add (local.get $acc01) (f64x2.mul (local.get $qx) (local.get $v))))
            (local.set $v (v128.load64_zero (i32.add (local.get $kt) (i32.shl (i32.load16_u (local.get $c2)) (i32.const 3)))))
            (local.set $v (v128.load64_lane 1 (i32.add (local.get $kt) (i32.shl (i32.load16_u (local.get $c3)) (i32.const 3))) (local.get $v)))
            (local.set $acc23 (f64x2.add (local.get $acc23) (f64x2.mul (local.get $qx) (local.get $v))))
            (local.set $c0 (i32.add (local.get $c0) (i32.const 2)))
            (local.set $c1 (i32.add (local.get $c1) (i32.const 2)))
            (local.set $c2 (i32.add (local.get $c2) (i32.const 2)))
            (local.set $c3 (i32.add (local.get $c3) (i32.const 2)))
            (local.set $x (i32.add (local.get $x) (i32.const 1)))
            (br $xLoop)))
        (v128.store (local.get $out) (f64x2.mul (local.get $scale) (local.get $acc01)))
        (v128.store offset=16 (local.get $out) (f64x2.mul (local.get $scale) (local.get $acc23)))
        (local.set $out (i32.add (local.get $out) (i32.const 32)))
        (local.set $codes (i32.add (local.get $codes) (i32.shl (local.get $stride2) (i32.const 2))))
        (local.set $t (i32.add (local.get $t) (i32.const 4)))
        (br $keyLoop))))

  (func $dotsf32 (export "dotsf32") (param $P i32)
    (local $q i32) (local $d i32) (local $k i32) (local $keys i32) (local $out i32)
    (local $stride4 i32) (local $t i32) (local $x i32) (local $k0 i32) (local $k1 i32) (local $k2 i32) (local $k3 i32)
    (local $qx v128) (local $v v128) (local $acc01 v128) (local $acc23 v128) (local $scale v128)
    (local.set $q (i32.load offset=0 (local.get $P)))
    (local.set $d (i32.load offset=4 (local.get $P)))
    (local.set $k (i32.load offset=8 (local.get $P)))
    (local.set $keys (i32.load offset=12 (local.get $P)))
    (local.set $out (i32.load offset=20 (local.get $P)))
    (local.set $stride4 (i32.shl (i32.load offset=24 (local.get $P)) (i32.const 2)))
    (local.set $scale (f64x2.splat (f64.load offset=32 (local.get $P))))
    (block $done
      (loop $keyLoop
        (br_if $done (i32.ge_u (local.get $t) (local.get $keys)))
        (local.set $k0 (local.get $k))
        (local.set $k1 (i32.add (local.get $k0) (local.get $stride4)))
        (local.set $k2 (i32.add (local.get $k1) (local.get $stride4)))
        (local.set $k3 (i32.add (local.get $k2) (local.get $stride4)))
        (local.set $acc01 (f64x2.splat (f64.const 0)))
        (local.set $acc23 (f64x2.splat (f64.const 0)))
        (local.set $x (i32.const 0))
        (block $xDone
          (loop $xLoop
            (br_if $xDone (i32.ge_u (local.get $x) (local.get $d)))
            (local.set $qx (v128.load64_splat (i32.add (local.get $q) (i32.shl (local.get $x) (i32.const 3)))))
            (local.set $v (f64x2.promote_low_f32x4
              (v128.load32_lane 1 (local.get $k1) (v128.load32_zero (local.get $k0)))))
            (local.set $acc01 (f64x2.add (local.get $acc01) (f64x2.mul (local.get $qx) (local.get $v))))
            (local.set $v (f64x2.promote_low_f32x4
              (v128.load32_lane 1 (local.get $k3) (v128.load32_zero (local.get $k2)))))
            (local.set $acc23 (f64x2.add (local.get $acc23) (f64x2.mul (local.get $qx) (local.get $v))))
            (local.set $k0 (i32.add (local.get $k0) (i32.const 4)))
            (local.set $k1 (i32.add (local.get $k1) (i32.const 4)))
            (local.set $k2 (i32.add (local.get $k2) (i32.const 4)))
            (local.set $k3 (i32.add (local.get $k3) (i32.const 4)))
            (local.set $x (i32.add (local.get $x) (i32.const 1)))
            (br $xLoop)))
        (v128.store (local.get $out) (f64x2.mul (local.get $scale) (local.get $acc01)))
        (v128.store offset=16 (local.get $out) (f64x2.mul (local.get $scale) (local.get $acc23)))
        (local.set $out (i32.add (local.get $out) (i32.const 32)))
        (local.set $k (i32.add (local.get $k) (i32.shl (local.get $stride4) (i32.const 2))))
        (local.set $t (i32.add (local.get $t) (i32.const 4)))
        (br $keyLoop))))

  (func $sum4 (export "sum4") (param $P i32)
    (local $w i32) (local $n i32) (local $r0 i32) (local $r1 i32) (local $r2 i32) (local $r3 i32) (local $vt i32)
    (local $j i32) (local $wj f64) (local $ws v128) (local $v v128) (local $acc01 v128) (local $acc23 v128)
    (local.set $w (i32.load offset=0 (local.get $P)))
    (local.set $n (i32.load offset=4 (local.get $P)))
    (local.set $r0 (i32.load offset=8 (local.get $P)))
    (local.set $r1 (i32.load offset=12 (local.get $P)))
    (local.set $r2 (i32.load offset=16 (local.get $P)))
    (local.set $r3 (i32.load offset=20 (local.get $P)))
    (local.set $vt (i32.load offset=24 (local.get $P)))
    (local.set $acc01 (v128.load offset=32 (local.get $P)))
    (local.set $acc23 (v128.load offset=48 (local.get $P)))
    (block $done
      (loop $jLoop
        (br_if $done (i32.ge_u (local.get $j) (local.get $n)))
        (local.set $wj (f64.load (local.get $w)))
        (if (f64.ne (local.get $wj) (f64.const -inf))
          (then
            (local.set $ws (f64x2.splat (local.get $wj)))
            (local.set $v (v128.load64_zero (i32.add (local.get $vt) (i32.shl (i32.load16_u (local.get $r0)) (i32.const 3)))))
            (local.set $v (v128.load64_lane 1 (i32.add (local.get $vt) (i32.shl (i32.load16_u (local.get $r1)) (i32.const 3))) (local.get $v)))
            (local.set $acc01 (f64x2.add (local.get $acc01) (f64x2.mul (local.get $ws) (local.get $v))))
            (local.set $v (v128.load64_zero (i32.add (local.get $vt) (i32.shl (i32.load16_u (local.get $r2)) (i32.const 3)))))
            (local.set $v (v128.load64_lane 1 (i32.add (local.get $vt) (i32.shl (i32.load16_u (local.get $r3)) (i32.const 3))) (local.get $v)))
            (local.set $acc23 (f64x2.add (local.get $acc23) (f64x2.mul (local.get $ws) (local.get $v))))))
        (local.set $w (i32.add (local.get $w) (i32.const 8)))
        (local.set $r0 (i32.add (local.get $r0) (i32.const 2)))
        (local.set $r1 (i32.add (local.get $r1) (i32.const 2)))
        (local.set $r2 (i32.add (local.get $r2) (i32.const 2)))
        (local.set $r3 (i32.add (local.get $r3) (i32.const 2)))
        (local.set $j (i32.add (local.get $j) (i32.const 1)))
        (br $jLoop)))
    (v128.store offset=32 (local.get $P) (local.get $acc01))
    (v128.store offset=48 (local.get $P) (local.get $acc23)))
)

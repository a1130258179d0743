;; magnitudes.wat: CountAbsAbove's loop (magnitudes.go) as hand-written
;; WebAssembly with 128-bit SIMD, for the js/wasm build (see package
;; internal/wasmk): four elements a step, each threshold's count kept per
;; lane as the Go loop keeps it per element: (t - a) >> 31 is 1 exactly
;; when the magnitude bits a exceed t (both below 2^31; 32-bit wrapping
;; arithmetic), so the counts are the Go loop's.
;;
;; count(P): P is the address of 8 u32 words:
;;   0 x (f32[n])   1 n (a multiple of 4, below 2^30)   2-5 the thresholds t[0..3]
;;   6, 7 unused; the four counts are written to P+32 (u32 each).
(module
  (import "env" "mem" (memory 0))

  (func $count (export "count") (param $P i32)
    (local $x i32) (local $end i32) (local $a v128) (local $mask v128)
    (local $t0 v128) (local $t1 v128) (local $t2 v128) (local $t3 v128)
    (local $c0 v128) (local $c1 v128) (local $c2 v128) (local $c3 v128)
    (local.set $x (i32.load offset=0 (local.get $P)))
    (local.set $end (i32.add (local.get $x) (i32.shl (i32.load offset=4 (local.get $P)) (i32.const 2))))
    (local.set $t0 (i32x4.splat (i32.load offset=8 (local.get $P))))
    (local.set $t1 (i32x4.splat (i32.load offset=12 (local.get $P))))
    (local.set $t2 (i32x4.splat (i32.load offset=16 (local.get $P))))
    (local.set $t3 (i32x4.splat (i32.load offset=20 (local.get $P))))
    (local.set $mask (i32x4.splat (i32.const 0x7fffffff)))
    (block $done
      (loop $l
        (br_if $done (i32.ge_u (local.get $x) (local.get $end)))
        (local.set $a (v128.and (v128.load (local.get $x)) (local.get $mask)))
        (local.set $c0 (i32x4.add (local.get $c0) (i32x4.shr_u (i32x4.sub (local.get $t0) (local.get $a)) (i32.const 31))))
        (local.set $c1 (i32x4.add (local.get $c1) (i32x4.shr_u (i32x4.sub (local.get $t1) (local.get $a)) (i32.const 31))))
        (local.set $c2 (i32x4.add (local.get $c2) (i32x4.shr_u (i32x4.sub (local.get $t2) (local.get $a)) (i32.const 31))))
        (local.set $c3 (i32x4.add (local.get $c3) (i32x4.shr_u (i32x4.sub (local.get $t3) (local.get $a)) (i32.const 31))))
        (local.set $x (i32.add (local.get $x) (i32.const 16)))
        (br $l)))
    (i32.store offset=32 (local.get $P) (call $sum (local.get $c0)))
    (i32.store offset=36 (local.get $P) (call $sum (local.get $c1)))
    (i32.store offset=40 (local.get $P) (call $sum (local.get $c2)))
    (i32.store offset=44 (local.get $P) (call $sum (local.get $c3))))

  ;; The sum of a vector's four lanes.
  (func $sum (param $v v128) (result i32)
    (i32.add
      (i32.add (i32x4.extract_lane 0 (local.get $v)) (i32x4.extract_lane 1 (local.get $v)))
      (i32.add (i32x4.extract_lane 2 (local.get $v)) (i32x4.extract_lane 3 (local.get $v)))))
)

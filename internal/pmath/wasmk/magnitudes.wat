;; magnitudes.wat: CountAbsAbove's loop (magnitudes.go) as hand-written
;; WebAssembly with 128-bit SIMD, for the js/wasm build (see package
;; internal/wasmk): four elements a step, each threshold's count kept per
;; lane: the lane's signed comparison a > t (both below 2^31) is the Go
;; loop's (t - a) >> 31, 1 exactly when the magnitude bits a exceed t, so
;; the counts are the Go loop's; a row's last cols mod 4 elements one at a
;; time, as the Go loop does.
;;
;; count(P): P is the address of 8 u32 words:
;;   0 x (f32)   1 cols   2-5 the thresholds t[0..3]   6 rows
;;   7 rowStride (elements between the rows' starts)
;; rows*cols at most 2^30; the four counts over every row are written to P+32
;; (u32 each).
(module
  (import "env" "mem" (memory 0))

  (func $count (export "count") (param $P i32)
    (local $x i32) (local $cols i32) (local $rows i32) (local $stride4 i32) (local $r i32)
    (local $p i32) (local $end4 i32) (local $end i32) (local $a v128) (local $mask v128)
    (local $t0 v128) (local $t1 v128) (local $t2 v128) (local $t3 v128)
    (local $c0 v128) (local $c1 v128) (local $c2 v128) (local $c3 v128)
    (local $s i32) (local $u0 i32) (local $u1 i32) (local $u2 i32) (local $u3 i32)
    (local.set $x (i32.load offset=0 (local.get $P)))
    (local.set $cols (i32.load offset=4 (local.get $P)))
    (local.set $t0 (i32x4.splat (i32.load offset=8 (local.get $P))))
    (local.set $t1 (i32x4.splat (i32.load offset=12 (local.get $P))))
    (local.set $t2 (i32x4.splat (i32.load offset=16 (local.get $P))))
    (local.set $t3 (i32x4.splat (i32.load offset=20 (local.get $P))))
    (local.set $rows (i32.load offset=24 (local.get $P)))
    (local.set $stride4 (i32.shl (i32.load offset=28 (local.get $P)) (i32.const 2)))
    (local.set $mask (i32x4.splat (i32.const 0x7fffffff)))
    (block $rowsDone
      (loop $rowLoop
        (br_if $rowsDone (i32.ge_u (local.get $r) (local.get $rows)))
        (local.set $p (i32.add (local.get $x) (i32.mul (local.get $r) (local.get $stride4))))
        (local.set $end (i32.add (local.get $p) (i32.shl (local.get $cols) (i32.const 2))))
        (local.set $end4 (i32.add (local.get $p) (i32.shl (i32.and (local.get $cols) (i32.const -4)) (i32.const 2))))
        (block $done
          (loop $l
            (br_if $done (i32.ge_u (local.get $p) (local.get $end4)))
            ;; a > t as a lane mask of -1: the count minus it.
            (local.set $a (v128.and (v128.load (local.get $p)) (local.get $mask)))
            (local.set $c0 (i32x4.sub (local.get $c0) (i32x4.gt_s (local.get $a) (local.get $t0))))
            (local.set $c1 (i32x4.sub (local.get $c1) (i32x4.gt_s (local.get $a) (local.get $t1))))
            (local.set $c2 (i32x4.sub (local.get $c2) (i32x4.gt_s (local.get $a) (local.get $t2))))
            (local.set $c3 (i32x4.sub (local.get $c3) (i32x4.gt_s (local.get $a) (local.get $t3))))
            (local.set $p (i32.add (local.get $p) (i32.const 16)))
            (br $l)))
        (block $tDone
          (loop $tl
            (br_if $tDone (i32.ge_u (local.get $p) (local.get $end)))
            (local.set $s (i32.and (i32.load (local.get $p)) (i32.const 0x7fffffff)))
            (local.set $u0 (i32.add (local.get $u0) (i32.shr_u (i32.sub (i32.load offset=8 (local.get $P)) (local.get $s)) (i32.const 31))))
            (local.set $u1 (i32.add (local.get $u1) (i32.shr_u (i32.sub (i32.load offset=12 (local.get $P)) (local.get $s)) (i32.const 31))))
            (local.set $u2 (i32.add (local.get $u2) (i32.shr_u (i32.sub (i32.load offset=16 (local.get $P)) (local.get $s)) (i32.const 31))))
            (local.set $u3 (i32.add (local.get $u3) (i32.shr_u (i32.sub (i32.load offset=20 (local.get $P)) (local.get $s)) (i32.const 31))))
            (local.set $p (i32.add (local.get $p) (i32.const 4)))
            (br $tl)))
        (local.set $r (i32.add (local.get $r) (i32.const 1)))
        (br $rowLoop)))
    (i32.store offset=32 (local.get $P) (i32.add (call $sum (local.get $c0)) (local.get $u0)))
    (i32.store offset=36 (local.get $P) (i32.add (call $sum (local.get $c1)) (local.get $u1)))
    (i32.store offset=40 (local.get $P) (i32.add (call $sum (local.get $c2)) (local.get $u2)))
    (i32.store offset=44 (local.get $P) (i32.add (call $sum (local.get $c3)) (local.get $u3))))

  ;; The sum of a vector's four lanes.
  (func $sum (param $v v128) (result i32)
    (i32.add
      (i32.add (i32x4.extract_lane 0 (local.get $v)) (i32x4.extract_lane 1 (local.get $v)))
      (i32.add (i32x4.extract_lane 2 (local.get $v)) (i32x4.extract_lane 3 (local.get $v)))))
)

;; normal.wat: FillNormalPCG (normal.go) as hand-written WebAssembly, for
;; the js/wasm build (see package internal/wasmk): math/rand/v2's PCG (its
;; 128-bit LCG step and DXSM output, the 64x64 -> 128-bit product through
;; 32-bit halves, written out at each draw: a helper function with two
;; results, and two chains of states side by side as FillNormalPCG's
;; pcgJump2 pair, were slower under node) and the ziggurat's rectangle and wedge tests, the same
;; integer and float64 operations in the same order as the Go code (no
;; fused multiply-add in WebAssembly), so the same variates bit for bit.
;;
;; A draw that reaches the tail (layer 0 outside its rectangle), or a wedge
;; test that expNear's bounds cannot decide (t outside its table, or y
;; within its margin), is left to the caller: the kernel stops with the
;; state of that draw's current Uint64, from which zigSlow goes on.
;;
;; (The module also holds pairs, PairsToF32's loop, heads, PairsToF32Heads's,
;; and alias, AliasPCG's: below.)
;;
;; fill(P): P is the address of 8 u32 words and two u64:
;;   0 dst (f64[n])   1 n   2 zk (i64[128])   3 zw (f64[128])
;;   4 zf (f64[128])   5 expTable (f64[96])
;;   6 constants (f64: 1/6, 1/24, 1/120, wedgeMargin)   7 unused
;;   at P+32 the state's hi, at P+40 its lo (u64): in, the state of the
;;   last Uint64 drawn; out, the same after the kernel's draws.
;; It returns the number of variates written to dst: n, or fewer when it
;; stopped at a draw it leaves to the caller (the state is that draw's).
(module
  (import "env" "mem" (memory 0))
  (global $mulHi i64 (i64.const 2549297995355413924))
  (global $mulLo i64 (i64.const 4865540595714422341))
  (global $incHi i64 (i64.const 6364136223846793005))
  (global $incLo i64 (i64.const 1442695040888963407))

  (func $fill (export "fill") (param $P i32) (result i32)
    (local $dst i32) (local $n i32) (local $zk i32) (local $zw i32) (local $zf i32) (local $et i32) (local $cs i32)
    (local $hi i64) (local $lo i64) (local $sHi i64) (local $sLo i64)
        (local $u i64) (local $h i64) (local $i i32) (local $hz i64) (local $x f64) (local $y f64) (local $t f64)
    (local $t0 i64) (local $t1 i64) (local $t2 i64) (local $t3 i64) (local $t4 i64)
    (local $s f64) (local $k i32) (local $r f64) (local $r2 f64) (local $a f64) (local $d f64) (local $j i32)
    (local.set $dst (i32.load offset=0 (local.get $P)))
    (local.set $n (i32.load offset=4 (local.get $P)))
    (local.set $zk (i32.load offset=8 (local.get $P)))
    (local.set $zw (i32.load offset=12 (local.get $P)))
    (local.set $zf (i32.load offset=16 (local.get $P)))
    (local.set $et (i32.load offset=20 (local.get $P)))
    (local.set $cs (i32.load offset=24 (local.get $P)))
    (local.set $hi (i64.load offset=32 (local.get $P)))
    (local.set $lo (i64.load offset=40 (local.get $P)))
    (block $stop
      (loop $next
        (br_if $stop (i32.ge_u (local.get $j) (local.get $n)))
        ;; A draw's first Uint64: one PCG step and its DXSM output (normal.go's
        ;; pcgNext and pcgOut, written out).
        (local.set $t0 (i64.mul (i64.and (local.get $lo) (i64.const 0xffffffff)) (i64.and (global.get $mulLo) (i64.const 0xffffffff))))
        (local.set $t1 (i64.mul (i64.and (local.get $lo) (i64.const 0xffffffff)) (i64.shr_u (global.get $mulLo) (i64.const 32))))
        (local.set $t2 (i64.mul (i64.shr_u (local.get $lo) (i64.const 32)) (i64.and (global.get $mulLo) (i64.const 0xffffffff))))
        (local.set $t3 (i64.add
          (i64.add (i64.mul (i64.shr_u (local.get $lo) (i64.const 32)) (i64.shr_u (global.get $mulLo) (i64.const 32))) (i64.shr_u (local.get $t1) (i64.const 32)))
          (i64.add (i64.shr_u (local.get $t2) (i64.const 32))
            (i64.shr_u
              (i64.add (i64.add (i64.shr_u (local.get $t0) (i64.const 32)) (i64.and (local.get $t1) (i64.const 0xffffffff)))
                (i64.and (local.get $t2) (i64.const 0xffffffff)))
              (i64.const 32)))))
        (local.set $t3 (i64.add (local.get $t3) (i64.add (i64.mul (local.get $hi) (global.get $mulLo)) (i64.mul (local.get $lo) (global.get $mulHi)))))
        (local.set $t4 (i64.mul (local.get $lo) (global.get $mulLo)))
        (local.set $lo (i64.add (local.get $t4) (global.get $incLo)))
        (local.set $hi (i64.add (i64.add (local.get $t3) (global.get $incHi)) (i64.extend_i32_u (i64.lt_u (local.get $lo) (local.get $t4)))))
        (local.set $t0 (i64.xor (local.get $hi) (i64.shr_u (local.get $hi) (i64.const 32))))
        (local.set $t0 (i64.mul (local.get $t0) (i64.const 0xda942042e4dd58b5)))
        (local.set $u (i64.mul (i64.xor (local.get $t0) (i64.shr_u (local.get $t0) (i64.const 48))) (i64.or (local.get $lo) (i64.const 1))))
        (loop $draw
          (local.set $i (i32.wrap_i64 (i64.and (local.get $u) (i64.const 127))))
          (local.set $hz (i64.shr_s (local.get $u) (i64.const 7)))
          (local.set $x (f64.mul (f64.convert_i64_s (local.get $hz))
            (f64.load (i32.add (local.get $zw) (i32.shl (local.get $i) (i32.const 3))))))
          ;; Inside the layer's rectangle: |hz| < zk[i].
          (if (i64.lt_s
                (select (local.get $hz) (i64.sub (i64.const 0) (local.get $hz)) (i64.ge_s (local.get $hz) (i64.const 0)))
                (i64.load (i32.add (local.get $zk) (i32.shl (local.get $i) (i32.const 3)))))
            (then
              (f64.store (i32.add (local.get $dst) (i32.shl (local.get $j) (i32.const 3))) (local.get $x))
              (local.set $j (i32.add (local.get $j) (i32.const 1)))
              (br $next)))
          ;; The tail: the caller's.
          (br_if $stop (i32.eqz (local.get $i)))
          ;; The wedge: y = zf[i] + unit*(zf[i-1] - zf[i]) against Exp(t),
          ;; t = (-0.5*x)*x, through expNear's bounds (wedgeBelow).
          (local.set $sHi (local.get $hi))
          (local.set $sLo (local.get $lo))
          (local.set $t0 (i64.mul (i64.and (local.get $lo) (i64.const 0xffffffff)) (i64.and (global.get $mulLo) (i64.const 0xffffffff))))
        (local.set $t1 (i64.mul (i64.and (local.get $lo) (i64.const 0xffffffff)) (i64.shr_u (global.get $mulLo) (i64.const 32))))
        (local.set $t2 (i64.mul (i64.shr_u (local.get $lo) (i64.const 32)) (i64.and (global.get $mulLo) (i64.const 0xffffffff))))
        (local.set $t3 (i64.add
          (i64.add (i64.mul (i64.shr_u (local.get $lo) (i64.const 32)) (i64.shr_u (global.get $mulLo) (i64.const 32))) (i64.shr_u (local.get $t1) (i64.const 32)))
          (i64.add (i64.shr_u (local.get $t2) (i64.const 32))
            (i64.shr_u
              (i64.add (i64.add (i64.shr_u (local.get $t0) (i64.const 32)) (i64.and (local.get $t1) (i64.const 0xffffffff)))
                (i64.and (local.get $t2) (i64.const 0xffffffff)))
              (i64.const 32)))))
        (local.set $t3 (i64.add (local.get $t3) (i64.add (i64.mul (local.get $hi) (global.get $mulLo)) (i64.mul (local.get $lo) (global.get $mulHi)))))
        (local.set $t4 (i64.mul (local.get $lo) (global.get $mulLo)))
        (local.set $lo (i64.add (local.get $t4) (global.get $incLo)))
        (local.set $hi (i64.add (i64.add (local.get $t3) (global.get $incHi)) (i64.extend_i32_u (i64.lt_u (local.get $lo) (local.get $t4)))))
        (local.set $t0 (i64.xor (local.get $hi) (i64.shr_u (local.get $hi) (i64.const 32))))
        (local.set $t0 (i64.mul (local.get $t0) (i64.const 0xda942042e4dd58b5)))
        (local.set $u (i64.mul (i64.xor (local.get $t0) (i64.shr_u (local.get $t0) (i64.const 48))) (i64.or (local.get $lo) (i64.const 1))))
          (local.set $y (f64.add
            (f64.load (i32.add (local.get $zf) (i32.shl (local.get $i) (i32.const 3))))
            (f64.mul
              (f64.mul (f64.add (f64.convert_i64_u (i64.shr_u (local.get $u) (i64.const 11))) (f64.const 0.5)) (f64.const 0x1p-53))
              (f64.sub
                (f64.load (i32.add (local.get $zf) (i32.shl (i32.sub (local.get $i) (i32.const 1)) (i32.const 3))))
                (f64.load (i32.add (local.get $zf) (i32.shl (local.get $i) (i32.const 3))))))))
          (local.set $t (f64.mul (f64.mul (f64.const -0.5) (local.get $x)) (local.get $x)))
          (local.set $s (f64.add (f64.mul (f64.const -16) (local.get $t)) (f64.const 0.5)))
          (if (i32.eqz (i32.and (f64.ge (local.get $s) (f64.const 0)) (f64.lt (local.get $s) (f64.const 96))))
            (then
              (local.set $hi (local.get $sHi))
              (local.set $lo (local.get $sLo))
              (br $stop)))
          (local.set $k (i32.trunc_f64_s (local.get $s)))
          (local.set $r (f64.add (local.get $t) (f64.div (f64.convert_i32_s (local.get $k)) (f64.const 16))))
          (local.set $r2 (f64.mul (local.get $r) (local.get $r)))
          (local.set $a (f64.mul
            (f64.load (i32.add (local.get $et) (i32.shl (local.get $k) (i32.const 3))))
            (f64.add
              (f64.add (f64.const 1) (local.get $r))
              (f64.mul (local.get $r2)
                (f64.add
                  (f64.add (f64.const 0.5) (f64.mul (local.get $r) (f64.load offset=0 (local.get $cs))))
                  (f64.mul (local.get $r2)
                    (f64.add (f64.load offset=8 (local.get $cs)) (f64.mul (local.get $r) (f64.load offset=16 (local.get $cs))))))))))
          (local.set $d (f64.mul (local.get $a) (f64.load offset=24 (local.get $cs))))
          (if (f64.lt (local.get $y) (f64.sub (local.get $a) (local.get $d)))
            (then
              (f64.store (i32.add (local.get $dst) (i32.shl (local.get $j) (i32.const 3))) (local.get $x))
              (local.set $j (i32.add (local.get $j) (i32.const 1)))
              (br $next)))
          (if (f64.gt (local.get $y) (f64.add (local.get $a) (local.get $d)))
            (then
              ;; Rejected: the draw goes on with a new Uint64.
              (local.set $t0 (i64.mul (i64.and (local.get $lo) (i64.const 0xffffffff)) (i64.and (global.get $mulLo) (i64.const 0xffffffff))))
        (local.set $t1 (i64.mul (i64.and (local.get $lo) (i64.const 0xffffffff)) (i64.shr_u (global.get $mulLo) (i64.const 32))))
        (local.set $t2 (i64.mul (i64.shr_u (local.get $lo) (i64.const 32)) (i64.and (global.get $mulLo) (i64.const 0xffffffff))))
        (local.set $t3 (i64.add
          (i64.add (i64.mul (i64.shr_u (local.get $lo) (i64.const 32)) (i64.shr_u (global.get $mulLo) (i64.const 32))) (i64.shr_u (local.get $t1) (i64.const 32)))
          (i64.add (i64.shr_u (local.get $t2) (i64.const 32))
            (i64.shr_u
              (i64.add (i64.add (i64.shr_u (local.get $t0) (i64.const 32)) (i64.and (local.get $t1) (i64.const 0xffffffff)))
                (i64.and (local.get $t2) (i64.const 0xffffffff)))
              (i64.const 32)))))
        (local.set $t3 (i64.add (local.get $t3) (i64.add (i64.mul (local.get $hi) (global.get $mulLo)) (i64.mul (local.get $lo) (global.get $mulHi)))))
        (local.set $t4 (i64.mul (local.get $lo) (global.get $mulLo)))
        (local.set $lo (i64.add (local.get $t4) (global.get $incLo)))
        (local.set $hi (i64.add (i64.add (local.get $t3) (global.get $incHi)) (i64.extend_i32_u (i64.lt_u (local.get $lo) (local.get $t4)))))
        (local.set $t0 (i64.xor (local.get $hi) (i64.shr_u (local.get $hi) (i64.const 32))))
        (local.set $t0 (i64.mul (local.get $t0) (i64.const 0xda942042e4dd58b5)))
        (local.set $u (i64.mul (i64.xor (local.get $t0) (i64.shr_u (local.get $t0) (i64.const 48))) (i64.or (local.get $lo) (i64.const 1))))
              (br $draw)))
          ;; Undecided: the caller's, from the draw's current Uint64.
          (local.set $hi (local.get $sHi))
          (local.set $lo (local.get $sLo))
          (br $stop))))
    (i64.store offset=32 (local.get $P) (local.get $hi))
    (i64.store offset=40 (local.get $P) (local.get $lo))
    (local.get $j))

  ;; pairs(P): PairsToF32 (pairs.go) for n pairs: a[i] = f32(as*z[2i]),
  ;; b[i] = f32(bm + bs*z[2i+1]), a pair a step in the two lanes of an
  ;; f64x2: the products (as, bs)*(z[2i], z[2i+1]), then + (-0, bm) (x + -0
  ;; is x, -0 included, so the a lane keeps the product's bits), then
  ;; demoted to float32 (round to nearest even), as the Go loop rounds each.
  ;; P is the address of 4 u32 words (0 a (f32[n]), 1 b (f32[n]),
  ;; 2 z (f64[2n]), 3 n), then as, bs, bm (f64) at P+16.
  (func $pairs (export "pairs") (param $P i32)
    (local $a i32) (local $b i32) (local $z i32) (local $end i32) (local $mul v128) (local $add v128) (local $v v128)
    (local.set $a (i32.load offset=0 (local.get $P)))
    (local.set $b (i32.load offset=4 (local.get $P)))
    (local.set $z (i32.load offset=8 (local.get $P)))
    (local.set $end (i32.add (local.get $z) (i32.shl (i32.load offset=12 (local.get $P)) (i32.const 4))))
    (local.set $mul (f64x2.replace_lane 1 (f64x2.splat (f64.load offset=16 (local.get $P))) (f64.load offset=24 (local.get $P))))
    (local.set $add (f64x2.replace_lane 1 (f64x2.splat (f64.const -0)) (f64.load offset=32 (local.get $P))))
    (block $done
      (loop $l
        (br_if $done (i32.ge_u (local.get $z) (local.get $end)))
        (local.set $v (f32x4.demote_f64x2_zero
          (f64x2.add (f64x2.mul (v128.load (local.get $z)) (local.get $mul)) (local.get $add))))
        (v128.store32_lane 0 (local.get $a) (local.get $v))
        (v128.store32_lane 1 (local.get $b) (local.get $v))
        (local.set $a (i32.add (local.get $a) (i32.const 4)))
        (local.set $b (i32.add (local.get $b) (i32.const 4)))
        (local.set $z (i32.add (local.get $z) (i32.const 16)))
        (br $l))))

  ;; heads(P): PairsToF32Heads (pairs.go) for n pairs: with m the
  ;; magnitude of the pair's head (mags[h], h advancing every d pairs and
  ;; wrapping after nm heads), a[i] = f32(m*z[2i]), b[i] = f32(m*(bm +
  ;; z[2i+1])), a pair a step in the two lanes of an f64x2: (z[2i],
  ;; z[2i+1]) + (-0, bm) (x + -0 is x, -0 included), times m in both lanes,
  ;; demoted to float32 (round to nearest even), as the Go loop rounds each.
  ;; P is the address of 7 u32 words (0 a (f32[n]), 1 b (f32[n]),
  ;; 2 z (f64[2n]), 3 n, 4 mags (f64[nm]), 5 nm, 6 d), then bm (f64) at P+32.
  (func $heads (export "heads") (param $P i32)
    (local $a i32) (local $b i32) (local $z i32) (local $end i32) (local $mags i32) (local $mend i32) (local $d i32)
    (local $mp i32) (local $x i32) (local $add v128) (local $m v128) (local $v v128)
    (local.set $a (i32.load offset=0 (local.get $P)))
    (local.set $b (i32.load offset=4 (local.get $P)))
    (local.set $z (i32.load offset=8 (local.get $P)))
    (local.set $end (i32.add (local.get $z) (i32.shl (i32.load offset=12 (local.get $P)) (i32.const 4))))
    (local.set $mags (i32.load offset=16 (local.get $P)))
    (local.set $mend (i32.add (local.get $mags) (i32.shl (i32.load offset=20 (local.get $P)) (i32.const 3))))
    (local.set $d (i32.load offset=24 (local.get $P)))
    (local.set $add (f64x2.replace_lane 1 (f64x2.splat (f64.const -0)) (f64.load offset=32 (local.get $P))))
    (local.set $mp (local.get $mags))
    (local.set $m (v128.load64_splat (local.get $mp)))
    (block $done
      (loop $l
        (br_if $done (i32.ge_u (local.get $z) (local.get $end)))
        (local.set $v (f32x4.demote_f64x2_zero
          (f64x2.mul (f64x2.add (v128.load (local.get $z)) (local.get $add)) (local.get $m))))
        (v128.store32_lane 0 (local.get $a) (local.get $v))
        (v128.store32_lane 1 (local.get $b) (local.get $v))
        (local.set $a (i32.add (local.get $a) (i32.const 4)))
        (local.set $b (i32.add (local.get $b) (i32.const 4)))
        (local.set $z (i32.add (local.get $z) (i32.const 16)))
        (local.set $x (i32.add (local.get $x) (i32.const 1)))
        (if (i32.eq (local.get $x) (local.get $d))
          (then
            (local.set $x (i32.const 0))
            (local.set $mp (i32.add (local.get $mp) (i32.const 8)))
            (if (i32.eq (local.get $mp) (local.get $mend)) (then (local.set $mp (local.get $mags))))
            (local.set $m (v128.load64_splat (local.get $mp)))))
        (br $l))))

  ;; alias(P): AliasPCG (alias.go) for n draws: u, the next Uint64 of the
  ;; PCG (the step and output written out as in fill), then
  ;; dst[j] = i if u & (2^56 - 1) < thr[i] (unsigned), else alias[i], with
  ;; i = u >> 56. P is the address of 4 u32 words (0 dst (u16[n]), 1 n,
  ;; 2 thr (u64[256]), 3 alias (u8[256])), then the state's hi at P+16 and
  ;; its lo at P+24 (u64): in, the state of the last Uint64 drawn; out, the
  ;; same after the n draws.
  (func $alias (export "alias") (param $P i32)
    (local $dst i32) (local $end i32) (local $thr i32) (local $al i32) (local $i i32)
    (local $hi i64) (local $lo i64) (local $u i64)
    (local $t0 i64) (local $t1 i64) (local $t2 i64) (local $t3 i64) (local $t4 i64)
    (local.set $dst (i32.load offset=0 (local.get $P)))
    (local.set $end (i32.add (local.get $dst) (i32.shl (i32.load offset=4 (local.get $P)) (i32.const 1))))
    (local.set $thr (i32.load offset=8 (local.get $P)))
    (local.set $al (i32.load offset=12 (local.get $P)))
    (local.set $hi (i64.load offset=16 (local.get $P)))
    (local.set $lo (i64.load offset=24 (local.get $P)))
    (block $done
      (loop $next
        (br_if $done (i32.ge_u (local.get $dst) (local.get $end)))
        (local.set $t0 (i64.mul (i64.and (local.get $lo) (i64.const 0xffffffff)) (i64.and (global.get $mulLo) (i64.const 0xffffffff))))
        (local.set $t1 (i64.mul (i64.and (local.get $lo) (i64.const 0xffffffff)) (i64.shr_u (global.get $mulLo) (i64.const 32))))
        (local.set $t2 (i64.mul (i64.shr_u (local.get $lo) (i64.const 32)) (i64.and (global.get $mulLo) (i64.const 0xffffffff))))
        (local.set $t3 (i64.add
          (i64.add (i64.mul (i64.shr_u (local.get $lo) (i64.const 32)) (i64.shr_u (global.get $mulLo) (i64.const 32))) (i64.shr_u (local.get $t1) (i64.const 32)))
          (i64.add (i64.shr_u (local.get $t2) (i64.const 32))
            (i64.shr_u
              (i64.add (i64.add (i64.shr_u (local.get $t0) (i64.const 32)) (i64.and (local.get $t1) (i64.const 0xffffffff)))
                (i64.and (local.get $t2) (i64.const 0xffffffff)))
              (i64.const 32)))))
        (local.set $t3 (i64.add (local.get $t3) (i64.add (i64.mul (local.get $hi) (global.get $mulLo)) (i64.mul (local.get $lo) (global.get $mulHi)))))
        (local.set $t4 (i64.mul (local.get $lo) (global.get $mulLo)))
        (local.set $lo (i64.add (local.get $t4) (global.get $incLo)))
        (local.set $hi (i64.add (i64.add (local.get $t3) (global.get $incHi)) (i64.extend_i32_u (i64.lt_u (local.get $lo) (local.get $t4)))))
        (local.set $t0 (i64.xor (local.get $hi) (i64.shr_u (local.get $hi) (i64.const 32))))
        (local.set $t0 (i64.mul (local.get $t0) (i64.const 0xda942042e4dd58b5)))
        (local.set $u (i64.mul (i64.xor (local.get $t0) (i64.shr_u (local.get $t0) (i64.const 48))) (i64.or (local.get $lo) (i64.const 1))))
        (local.set $i (i32.wrap_i64 (i64.shr_u (local.get $u) (i64.const 56))))
        (i32.store16 (local.get $dst)
          (select
            (local.get $i)
            (i32.load8_u (i32.add (local.get $al) (local.get $i)))
            (i64.lt_u (i64.and (local.get $u) (i64.const 0xffffffffffffff))
              (i64.load (i32.add (local.get $thr) (i32.shl (local.get $i) (i32.const 3)))))))
        (local.set $dst (i32.add (local.get $dst) (i32.const 2)))
        (br $next)))
    (i64.store offset=16 (local.get $P) (local.get $hi))
    (i64.store offset=24 (local.get $P) (local.get $lo)))
)

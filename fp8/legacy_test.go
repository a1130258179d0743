package fp8

// legacyEncode is the e4m3/e5m2 rounding routine of fp8lab before the
// format table (commit 91d34b5), verified bit for bit on the H200
// conversion captures. The tests keep it as the reference that the generic
// routine must reproduce for every input.
// legacyEncode rounds float32 bits to a code with mbits fraction bits and minimum
// normal exponent emin; maxCode is the largest finite magnitude code,
// overCode what NoSat gives beyond it, nanCode the NaN magnitude code.
func legacyEncode(bits uint32, mbits uint, emin int32, maxCode, overCode, nanCode uint32, sat Saturation) uint32 {
	sign := (bits >> 24) & 0x80
	abs := bits & 0x7fffffff
	if abs > 0x7f800000 {
		return sign | nanCode
	}
	over := overCode
	if sat == SatFinite {
		over = maxCode
	}
	if abs == 0x7f800000 {
		return sign | over
	}
	exp := int32(abs >> 23)
	if exp == 0 {
		// float32 subnormals are below 2^-126, far below half of any
		// fp8 subnormal: they round to zero.
		return sign
	}
	e := exp - 127
	// The largest fp8 exponent is 15 (e5m2); anything from 2^18 up is an
	// overflow for both formats, whatever the rounding.
	if e > 17 {
		return sign | over
	}
	m := abs&0x7fffff | 0x800000
	te := e
	if te < emin {
		te = emin
	}
	// Value in units of the target quantum 2^(te-mbits): m >> shift.
	shift := uint32(23 - int32(mbits) + (te - e))
	var q uint32
	if shift < 32 {
		q = m >> shift
		rem := m & (1<<shift - 1)
		half := uint32(1) << (shift - 1)
		if rem > half || (rem == half && q&1 == 1) {
			q++
		}
	}
	// Exponent field and fraction in one sum: a carry out of the
	// fraction increments the exponent, and q < 2^mbits at te == emin is
	// a subnormal code.
	code := uint32(te-emin)<<mbits + q
	if code > maxCode {
		return sign | over
	}
	return sign | code
}

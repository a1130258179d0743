package cpufeat

// slowGatherVendor reports whether the CPUID vendor string v names a
// vendor whose gathers SlowGather counts as slow.
func slowGatherVendor(v string) bool {
	return v == "AuthenticAMD" || v == "HygonGenuine"
}

package index

import "github.com/bits-and-blooms/bloom/v3"

// addressFilter holds every address with a balance during a bulk import
// (those the index had when it began and those the import gave one), so
// that the import can tell an address that has none without looking in
// the database. Without it, every output that pays a new address costs a
// lookup once the import keeps fewer balances than there are (maxCached),
// or from the start when the index had some, which the tables' bloom
// filters answer only after finding the tables of each level and reading
// their filters (BENCHMARKS.md, "With the address index").
//
// It is a stack of bloom filters (bits-and-blooms/bloom), each for twice
// the addresses of the one before, at 1% false positives each; a false
// positive costs only the lookup it would have saved. It holds at most
// maxFilters filters: 267 million addresses in 306 MiB. Past that, add
// reports false and the caller drops the filter.
type addressFilter struct {
	filters []*bloom.BloomFilter
	room    uint // addresses the last filter has room for
	first   uint // addresses the first filter is for
	most    int  // filters at most
}

const (
	firstFilterAddresses = 1 << 20
	maxFilters           = 8
	filterFalsePositives = 0.01
)

func newAddressFilter() *addressFilter {
	return &addressFilter{first: firstFilterAddresses, most: maxFilters}
}

// add records addrDesc; false means the filter is full and can no longer
// prove an absence.
func (f *addressFilter) add(addrDesc []byte) bool {
	if f.room == 0 {
		if len(f.filters) == f.most {
			return false
		}
		f.room = f.first << len(f.filters)
		f.filters = append(f.filters, bloom.NewWithEstimates(f.room, filterFalsePositives))
	}
	f.filters[len(f.filters)-1].Add(addrDesc)
	f.room--
	return true
}

// mayHold reports whether addrDesc may have been added; false proves it
// was not.
func (f *addressFilter) mayHold(addrDesc []byte) bool {
	// An address never added is tested against every filter. Filters of
	// one false-positive rate hash alike, so the address is hashed once
	// (bloom.Locations) rather than once a filter: that cuts the test of
	// a four-filter stack by about two fifths (BenchmarkAddressFilterMiss).
	var locs []uint64
	for _, b := range f.filters {
		if uint(len(locs)) != b.K() {
			locs = bloom.Locations(addrDesc, b.K())
		}
		if b.TestLocations(locs) {
			return true
		}
	}
	return false
}

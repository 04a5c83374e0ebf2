package index

import (
	"encoding/json"
	"fmt"
	"time"
)

// DataFormatVersion is Blockbook's internal data format version this
// package reads and writes.
const DataFormatVersion = 5

// dbState values, as Blockbook numbers them (common.DbState*).
const (
	dbStateClosed       = uint32(0)
	dbStateOpen         = uint32(1)
	dbStateInconsistent = uint32(2)
)

// internalState is the JSON kept in the default column under
// "internalState". The field names are Blockbook's (common.InternalState);
// fields Blockbook keeps that mean nothing here are omitted. The data
// format version lives, as in Blockbook, in dbColumns[].version.
type internalState struct {
	Coin        string        `json:"coin"`
	DbState     uint32        `json:"dbState"`
	LastStore   time.Time     `json:"lastStore"`
	BestHeight  uint32        `json:"bestHeight"`
	DbColumns   []columnState `json:"dbColumns"`
	UtxoChecked bool          `json:"utxoChecked"`
	// P2PKAsP2PKH is utxostore's: the index keys pay-to-pubkey outputs by
	// their key's P2PKH descriptor, as Blockbook does (AddrDesc). An index
	// without it keyed them by the raw script and answers their addresses
	// wrongly, so it is refused.
	P2PKAsP2PKH bool `json:"p2pkAsP2pkh,omitempty"`
	// AddressesPastFilter is utxostore's too: the index has had more
	// addresses than a bulk import's addressFilter holds, so an import
	// does not read them into one (Index.fillAddressFilter).
	AddressesPastFilter bool `json:"addressesPastFilter,omitempty"`
}

type columnState struct {
	Name       string    `json:"name"`
	Version    uint32    `json:"version"`
	Rows       int64     `json:"rows"`
	KeyBytes   int64     `json:"keyBytes"`
	ValueBytes int64     `json:"valueBytes"`
	Updated    time.Time `json:"updated"`
}

func newInternalState(coin string) *internalState {
	is := &internalState{Coin: coin, UtxoChecked: true, P2PKAsP2PKH: true}
	for _, n := range columnNames {
		is.DbColumns = append(is.DbColumns, columnState{Name: n, Version: DataFormatVersion})
	}
	return is
}

func (is *internalState) pack() ([]byte, error) {
	is.LastStore = time.Now().UTC()
	return json.Marshal(is)
}

func unpackInternalState(val []byte) (*internalState, error) {
	var is internalState
	if err := json.Unmarshal(val, &is); err != nil {
		return nil, corrupt(cfDefault, []byte(internalStateKey), "%v", err)
	}
	return &is, nil
}

// check refuses a state this package must not run against, in Blockbook's
// order: coin, then column versions, then dbState.
func (is *internalState) check(dir, coin string, refuseUnclean bool) error {
	if is.Coin != coin {
		return &StateError{Dir: dir, Err: ErrCoinMismatch, Detail: fmt.Sprintf("index holds coin %q, opened for %q", is.Coin, coin)}
	}
	have := make(map[string]uint32, len(is.DbColumns))
	for _, c := range is.DbColumns {
		have[c.Name] = c.Version
	}
	for _, n := range columnNames {
		v, ok := have[n]
		if !ok {
			return &StateError{Dir: dir, Err: ErrVersionMismatch, Detail: fmt.Sprintf("column %s is not recorded", n)}
		}
		if v != DataFormatVersion {
			return &StateError{Dir: dir, Err: ErrVersionMismatch, Detail: fmt.Sprintf("column %s has data format version %d, want %d", n, v, DataFormatVersion)}
		}
	}
	if !is.P2PKAsP2PKH {
		return &StateError{Dir: dir, Err: ErrVersionMismatch, Detail: "the index keys pay-to-pubkey outputs by their raw script, not by their P2PKH descriptor as Blockbook does"}
	}
	switch is.DbState {
	case dbStateClosed:
	case dbStateOpen:
		if refuseUnclean {
			return &StateError{Dir: dir, Err: ErrUncleanShutdown, Detail: "dbState is open"}
		}
	case dbStateInconsistent:
		return &StateError{Dir: dir, Err: ErrInconsistent, Detail: "dbState is inconsistent"}
	default:
		return &StateError{Dir: dir, Err: ErrInconsistent, Detail: fmt.Sprintf("unknown dbState %d", is.DbState)}
	}
	return nil
}

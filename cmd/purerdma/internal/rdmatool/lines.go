package rdmatool

// The output of rdma's show commands: one line of words a device, port or
// object, which -j prints as a JSON object of the same members.

import (
	"encoding/json"
	"strings"
)

// resName is table[v], the name rdma prints for a value, "UNKNOWN" past
// the table.
func resName(table []string, v uint8) string {
	if int(v) < len(table) {
		return table[v]
	}
	return "UNKNOWN"
}

// resLine is one line of output: its words (text) and its JSON members,
// in order.
type resLine struct {
	text strings.Builder
	keys []string
	vals []any
}

func (l *resLine) add(key, text string, val any) {
	l.text.WriteString(text)
	l.keys = append(l.keys, key)
	l.vals = append(l.vals, val)
}

func (l *resLine) MarshalJSON() ([]byte, error) {
	var b strings.Builder
	b.WriteByte('{')
	for i, k := range l.keys {
		if i > 0 {
			b.WriteByte(',')
		}
		kj, _ := json.Marshal(k)
		vj, err := json.Marshal(l.vals[i])
		if err != nil {
			return nil, err
		}
		b.Write(kj)
		b.WriteByte(':')
		b.Write(vj)
	}
	b.WriteByte('}')
	return []byte(b.String()), nil
}

package vmproto

import (
	"errors"
	"strings"
	"testing"
)

func TestMessages(t *testing.T) {
	for _, c := range []struct {
		line string
		want Message
	}{
		{Ready(3.25), Message{Kind: "ready", Uptime: 3.25}},
		{Exit(3), Message{Kind: "exit", Code: 3}},
		{Error(errors.New("no rxe0\nafter 30s")), Message{Kind: "error", Text: "no rxe0; after 30s"}},
	} {
		got, err := Parse(strings.TrimSuffix(c.line, "\n"))
		if err != nil || got != c.want {
			t.Errorf("Parse(%q) = %+v, %v; want %+v", c.line, got, err, c.want)
		}
	}
	if _, err := Parse("bogus 1"); err == nil {
		t.Error("Parse accepted an unknown message")
	}
}

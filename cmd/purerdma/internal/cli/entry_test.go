package cli

import (
	"io"
	"testing"
)

// Find binds the one tool it finds to the environment, as BindAll binds
// each of a table's, in the table's order.
func TestEntryBinding(t *testing.T) {
	type env struct{ ran []string }
	table := []Entry[*env]{
		{Name: "a", Summary: "first", Run: func(e *env, args []string, _, _ io.Writer) error {
			e.ran = append(e.ran, "a"+args[0])
			return nil
		}},
		{Name: "b", Batch: true, Run: func(e *env, args []string, _, _ io.Writer) error {
			e.ran = append(e.ran, "b"+args[0])
			return nil
		}},
	}
	e := &env{}
	tool, ok := Find(table, e, "b")
	if !ok || tool.Name != "b" || !tool.Batch {
		t.Fatalf("Find b = %+v, %v", tool, ok)
	}
	if err := tool.Run([]string{"1"}, io.Discard, io.Discard); err != nil {
		t.Fatal(err)
	}
	if _, ok := Find(table, e, "c"); ok {
		t.Error("Find c found a tool")
	}
	all := BindAll(table, e)
	if len(all) != 2 || all[0].Name != "a" || all[0].Summary != "first" || all[1].Name != "b" {
		t.Fatalf("BindAll = %+v", all)
	}
	for _, tl := range all {
		if err := tl.Run([]string{"2"}, io.Discard, io.Discard); err != nil {
			t.Fatal(err)
		}
	}
	if got := e.ran; len(got) != 3 || got[0] != "b1" || got[1] != "a2" || got[2] != "b2" {
		t.Errorf("runs %v, want [b1 a2 b2]", got)
	}
}

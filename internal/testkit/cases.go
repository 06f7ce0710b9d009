package testkit

import (
	"bufio"
	"encoding/json"
	"os"
	"testing"
)

// CaseLine returns the line of the JSON Lines file whose member "id" is
// id (the shape of testdata/shared/cases/*.jsonl). A line that is not a
// JSON object, a file that cannot be read, or no such line fails the test.
func CaseLine(t testing.TB, file, id string) []byte {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		var c struct {
			ID string `json:"id"`
		}
		if err := json.Unmarshal(sc.Bytes(), &c); err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		if c.ID == id {
			return append([]byte(nil), sc.Bytes()...)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	t.Fatalf("case %s not in %s", id, file)
	return nil
}

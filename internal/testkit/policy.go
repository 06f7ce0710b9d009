package testkit

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
)

// SearchPolicy is a valid policy (the format of examples/policy.yaml) that
// allows */search under the rule id searchID, denies */delete_* and allows
// initialize and tools/list: two such policies decide every request alike
// but report different rule ids.
func SearchPolicy(searchID string) []byte {
	return fmt.Appendf(nil, `default: deny
deny:
  - id: no-deletes
    match: "*/delete_*"
allow:
  - id: %s
    match: "*/search"
methods:
  allow: [initialize, tools/list]
`, searchID)
}

// PolicyVersion is the version a policy file's bytes src are known by:
// "sha256:" and the lowercase hex SHA-256 of src, computed here apart from
// the code under test.
func PolicyVersion(src []byte) string {
	sum := sha256.Sum256(src)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// Package testkit holds the helpers this repository's tests share: signing
// keys and JWT signing (RS256 under a kid, any typ, hand-built ES256 JWS
// that go-jose would not write), an OpenID provider on 127.0.0.1 with
// rotatable keys and fault switches, a throw-away certificate authority,
// a settable clock, waits that name what they wait for, a gRPC health rig
// and small file and buffer helpers.
//
// It is for _test.go files only. It imports no package of this module, so
// the tests of any package, in-package or external, can use it without an
// import cycle; a helper that needs a package of the module stays in that
// package's tests. Redis servers for tests are internal/state/statetest's.
//
// Nothing here is safe outside a test: keys are generated with no care for
// storage, the provider trusts every caller, and every failure ends the
// test (t.Fatal) rather than returning an error.
package testkit

package bearer

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/big"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
	"unsafe"

	jose "github.com/go-jose/go-jose/v4"

	"github.com/mcp-extauthz/mcp-extauthz/internal/jsonscan"
)

// MaxTokenBytes is the longest compact JWS the verifier reads, a bearer
// token or an approval: 16 KiB, room for an Entra ID token with its 200
// group ids. A longer one is refused (token_malformed) before anything is
// split or decoded, so a request nobody vouched for costs at most about
// three quarters of this in decoded bytes (issue 15).
const MaxTokenBytes = 16 << 10

// Header is what Verify reads of a JWS protected header (RFC 7515 section
// 4.1): alg, kid and typ. HasTyp tells an absent typ from an empty one.
type Header struct {
	Alg    string
	Kid    string
	Typ    string
	HasTyp bool
}

// compactJWS is a compact JWS (RFC 7515 section 7.1) split and decoded,
// its signature not yet checked.
type compactJWS struct {
	signingInput string // BASE64URL(header) "." BASE64URL(payload), as received: what the signature covers
	header       Header
	payload      []byte
	sig          []byte
}

var b64 = base64.RawURLEncoding.Strict()

// parseCompact splits raw into a compact JWS. It refuses, before any
// allocation, a value longer than MaxTokenBytes, one with other than two
// dots, and a byte outside the base64url alphabet (RFC 7515 section 2: no
// padding, no line breaks, which Go's decoder would otherwise skip); then a
// segment that is not canonical base64url and a header ParseHeader refuses.
func parseCompact(raw string) (*compactJWS, error) {
	if len(raw) > MaxTokenBytes {
		return nil, fmt.Errorf("%d bytes, over %d", len(raw), MaxTokenBytes)
	}
	dots := 0
	for i := 0; i < len(raw); i++ {
		switch c := raw[i]; {
		case c == '.':
			dots++
		case !isBase64URL(c):
			return nil, fmt.Errorf("byte %d is not base64url (RFC 7515 section 2)", i)
		}
	}
	if dots != 2 {
		return nil, errors.New("not a compact JWS: want three dot-separated parts")
	}
	h, rest, _ := strings.Cut(raw, ".")
	p, s, _ := strings.Cut(rest, ".")
	hb, err := b64.DecodeString(h)
	if err != nil {
		return nil, fmt.Errorf("header: %w", err)
	}
	hdr, err := parseHeader(hb)
	if err != nil {
		return nil, err
	}
	payload, err := b64.DecodeString(p)
	if err != nil {
		return nil, fmt.Errorf("payload: %w", err)
	}
	sig, err := b64.DecodeString(s)
	if err != nil {
		return nil, fmt.Errorf("signature: %w", err)
	}
	return &compactJWS{signingInput: raw[:len(h)+1+len(p)], header: hdr, payload: payload, sig: sig}, nil
}

func isBase64URL(c byte) bool {
	return 'A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-' || c == '_'
}

// ParseHeader reads the protected header of the compact JWS raw, without
// checking its signature, under the rules Verify applies: raw as
// parseCompact takes it, the header one JSON object in UTF-8 with no
// duplicate member and no case variant of a registered one ("TYP",
// "Alg"), which JSON decoders disagree on; alg, kid and typ strings when
// present; no crit (RFC 7515 section 4.1.11: no extension is understood
// here) and no b64 (RFC 7797).
func ParseHeader(raw string) (Header, error) {
	j, err := parseCompact(raw)
	if err != nil {
		return Header{}, err
	}
	return j.header, nil
}

// registeredHeaders are the header parameters of RFC 7515 section 4.1,
// RFC 7516 and RFC 7797 whose case variants are refused.
var registeredHeaders = []string{"alg", "jku", "jwk", "kid", "x5u", "x5c", "x5t", "x5t#S256", "typ", "cty", "crit", "b64", "enc", "zip"}

func parseHeader(b []byte) (Header, error) {
	var h Header
	if !utf8.Valid(b) {
		return h, errors.New("header: not UTF-8")
	}
	if err := checkJSON(b); err != nil {
		return h, fmt.Errorf("header: %w", err)
	}
	n := 0
	it := jsonscan.Members(b, jsonscan.SkipSpace(b, 0))
	for n <= maxHeaderMembers && it.Next() {
		n++
	}
	if n > maxHeaderMembers {
		return h, fmt.Errorf("header: more than %d members", maxHeaderMembers)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return h, errors.New("header: not a JSON object")
	}
	var seen []string
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return h, fmt.Errorf("header: %w", err)
		}
		name, _ := t.(string)
		if slices.Contains(seen, name) {
			return h, fmt.Errorf("header: member %s twice", clip(name))
		}
		seen = append(seen, name)
		for _, r := range registeredHeaders {
			if name != r && strings.EqualFold(name, r) {
				return h, fmt.Errorf("header: member %s is a case variant of %q", clip(name), r)
			}
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return h, fmt.Errorf("header: %w", err)
		}
		var dst *string
		switch name {
		case "alg":
			dst = &h.Alg
		case "kid":
			dst = &h.Kid
		case "typ":
			dst, h.HasTyp = &h.Typ, true
		case "crit", "b64":
			return h, fmt.Errorf("header: %s is not supported", name)
		default:
			continue
		}
		if len(v) == 0 || v[0] != '"' || json.Unmarshal(v, dst) != nil {
			return h, fmt.Errorf("header: %s is not a string", name)
		}
	}
	if _, err := dec.Token(); err != nil { // the closing brace
		return h, fmt.Errorf("header: %w", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return h, errors.New("header: data after the JSON object")
	}
	return h, nil
}

// Access-token types and the JWT kinds refused where an access token is
// expected (RFC 8725 section 3.11, explicit typing).
var (
	// AccessTokenTypes is the default of OIDCConfig.Types: no typ, "JWT"
	// (RFC 7519 section 5.1) and "at+jwt" (RFC 9068 section 2.1).
	AccessTokenTypes = []string{"", "JWT", "at+jwt"}
	// OtherJWTTypes are the typ values of JWT kinds that are never access
	// tokens: approvals (mcp-approval+jwt), signed decisions
	// (mcp-decision+jwt, package mcpdecision), DPoP proofs (RFC 9449), logout
	// tokens (OpenID Connect Back-Channel Logout 1.0 section 2.4),
	// security event tokens (RFC 8417), JWT introspection responses (RFC
	// 9701), request objects (RFC 9101), SD-JWT key-binding JWTs, OpenID
	// Federation entity statements and OAuth client attestations. An
	// OIDCConfig for access tokens must not list them.
	OtherJWTTypes = []string{
		"mcp-approval+jwt", "mcp-decision+jwt", "dpop+jwt", "logout+jwt", "secevent+jwt",
		"token-introspection+jwt", "oauth-authz-req+jwt", "kb+jwt",
		"entity-statement+jwt", "oauth-client-attestation+jwt", "oauth-client-attestation-pop+jwt",
	}
)

// MediaType returns the media type a typ value names (RFC 7515 section
// 4.1.9): "application/" prepended when typ holds no '/', ASCII letters
// lower-cased (RFC 6838 section 4.2: names are case-insensitive). So "JWT",
// "jwt" and "application/JWT" are one type. Nothing else is folded: a
// parameter, a space or a non-ASCII letter makes another type.
func MediaType(typ string) string {
	if !strings.Contains(typ, "/") {
		typ = "application/" + typ
	}
	b := []byte(typ)
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

// SameMediaType reports whether typ values a and b name one media type.
func SameMediaType(a, b string) bool { return MediaType(a) == MediaType(b) }

// IsOtherJWTType reports whether typ names one of OtherJWTTypes.
func IsOtherJWTType(typ string) bool {
	return slices.ContainsFunc(OtherJWTTypes, func(o string) bool { return SameMediaType(o, typ) })
}

// CheckMediaType returns an error unless typ is a plain media type name,
// type "/" subtype of RFC 6838 section 4.2's restricted-name characters,
// once "application/" is prepended where typ holds no '/'.
func CheckMediaType(typ string) error {
	mt := MediaType(typ)
	top, sub, _ := strings.Cut(mt, "/")
	if !restrictedName(top) || !restrictedName(sub) {
		return fmt.Errorf("typ %q: want a media type name such as at+jwt or application/at+jwt (RFC 6838 section 4.2)", typ)
	}
	return nil
}

func restrictedName(s string) bool {
	if s == "" || len(s) > 127 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case 'a' <= c && c <= 'z', '0' <= c && c <= '9':
		case i > 0 && strings.IndexByte("!#$&-^_.+", c) >= 0:
		default:
			return false
		}
	}
	return true
}

// typeSet is an accepted set of typ values.
type typeSet struct {
	absent bool     // no typ member is accepted
	types  []string // MediaType of each accepted value
}

func newTypeSet(types []string) (typeSet, error) {
	var s typeSet
	for _, t := range types {
		if t == "" {
			s.absent = true
			continue
		}
		if err := CheckMediaType(t); err != nil {
			return s, err
		}
		s.types = append(s.types, MediaType(t))
	}
	return s, nil
}

func (s typeSet) accepts(h Header) bool {
	if !h.HasTyp {
		return s.absent
	}
	return slices.Contains(s.types, MediaType(h.Typ))
}

// verifySignature checks sig over input with key under alg, as go-jose does
// (RFC 7518 section 3): RSASSA-PKCS1-v1_5 and RSASSA-PSS (any salt length)
// with RSA keys, ECDSA with the curve alg names and r || s of its size,
// Ed25519. input is hashed in place: no copy of the token is made.
func verifySignature(key crypto.PublicKey, alg string, input string, sig []byte) error {
	in := unsafe.Slice(unsafe.StringData(input), len(input)) // read only
	var h crypto.Hash
	switch alg {
	case "RS256", "PS256", "ES256":
		h = crypto.SHA256
	case "RS384", "PS384", "ES384":
		h = crypto.SHA384
	case "RS512", "PS512", "ES512":
		h = crypto.SHA512
	case "EdDSA":
		pub, ok := key.(ed25519.PublicKey)
		if !ok {
			return fmt.Errorf("alg EdDSA with a %T key", key)
		}
		if !ed25519.Verify(pub, in, sig) {
			return errors.New("ed25519 signature does not verify")
		}
		return nil
	default:
		return fmt.Errorf("alg %s not allowed", clip(alg))
	}
	hasher := h.New()
	hasher.Write(in)
	var buf [64]byte
	digest := hasher.Sum(buf[:0])
	switch alg[0] {
	case 'R', 'P':
		pub, ok := key.(*rsa.PublicKey)
		if !ok {
			return fmt.Errorf("alg %s with a %T key", alg, key)
		}
		if alg[0] == 'R' {
			return rsa.VerifyPKCS1v15(pub, h, digest, sig)
		}
		return rsa.VerifyPSS(pub, h, digest, sig, nil)
	}
	pub, ok := key.(*ecdsa.PublicKey)
	if !ok {
		return fmt.Errorf("alg %s with a %T key", alg, key)
	}
	curve := elliptic.P256()
	switch alg {
	case "ES384":
		curve = elliptic.P384()
	case "ES512":
		curve = elliptic.P521()
	}
	size := (curve.Params().BitSize + 7) / 8
	if pub.Curve != curve {
		return fmt.Errorf("alg %s with a %s key", alg, pub.Curve.Params().Name)
	}
	if len(sig) != 2*size {
		return fmt.Errorf("ecdsa signature of %d bytes, want %d", len(sig), 2*size)
	}
	r, s := new(big.Int).SetBytes(sig[:size]), new(big.Int).SetBytes(sig[size:])
	if !ecdsa.Verify(pub, digest, r, s) {
		return errors.New("ecdsa signature does not verify")
	}
	return nil
}

// verifyWith tries the keys that may have signed j: the kid's when the
// header names one, each only under the alg its JWK names, if any (RFC 7517
// section 4.4).
func verifyWith(keys []jose.JSONWebKey, j *compactJWS) error {
	if !slices.Contains(SigningAlgorithms, j.header.Alg) {
		return fmt.Errorf("alg %s not allowed", clip(j.header.Alg))
	}
	for _, k := range keys {
		if j.header.Kid != "" && k.KeyID != j.header.Kid || k.Algorithm != "" && k.Algorithm != j.header.Alg {
			continue
		}
		if verifySignature(k.Key, j.header.Alg, j.signingInput, j.sig) == nil {
			return nil
		}
	}
	return errors.New("no key in the key set verifies the signature")
}

// numericDate is a JWT NumericDate (RFC 7519 section 2): a JSON number of
// seconds since the epoch. A string, even of digits, or null is refused
// (encoding/json would take "123" for a json.Number).
type numericDate struct {
	set bool
	t   time.Time
}

// numericDateBound clamps NumericDates to about ±31,700 years, so that
// 1e300 is far future, not an int64 overflow into the past.
const numericDateBound = 1e12

func (d *numericDate) UnmarshalJSON(b []byte) error {
	if len(b) == 0 || b[0] != '-' && (b[0] < '0' || b[0] > '9') {
		return fmt.Errorf("%.32s is not a NumericDate (a JSON number)", b)
	}
	f, err := strconv.ParseFloat(string(b), 64)
	if err != nil && !errors.Is(err, strconv.ErrRange) {
		return fmt.Errorf("%.32s is not a NumericDate: %w", b, err)
	}
	f = max(-numericDateBound, min(f, numericDateBound))
	sec := math.Floor(f)
	d.set, d.t = true, time.Unix(int64(sec), int64((f-sec)*1e9))
	return nil
}

// Bounds on the JSON of a header or a payload read before the signature is
// checked, so that what a request nobody vouched for costs stays bounded by
// its length: encoding/json's scanner keeps a stack entry per level of
// nesting, and decoding allocates per member.
const (
	maxJOSEDepth     = 32 // real claims nest 3 or 4 deep
	maxHeaderMembers = 64 // RFC 7515 and RFC 7516 register 14
)

// checkJSON reports whether b is one valid JSON text nesting at most
// maxJOSEDepth deep, without allocating.
func checkJSON(b []byte) error {
	depth := 0
	for i := 0; i < len(b); i++ {
		switch b[i] {
		case '"':
			if i = jsonscan.String(b, i) - 1; i < 0 {
				i = len(b) // it does not close: json.Valid refuses it
			}
		case '[', '{':
			if depth++; depth > maxJOSEDepth {
				return fmt.Errorf("JSON nested more than %d deep", maxJOSEDepth)
			}
		case ']', '}':
			depth--
		}
	}
	if !json.Valid(b) {
		return errors.New("not JSON")
	}
	return nil
}

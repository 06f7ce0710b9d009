package bearer

import (
	"bytes"
	"container/heap"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"time"

	jose "github.com/go-jose/go-jose/v4"

	"github.com/mcp-extauthz/mcp-extauthz/internal/byteset"
)

// DPoP (RFC 9449) at the sidecar. A token whose cnf claim holds jkt is
// bound to a key: it is accepted only with the DPoP authentication scheme
// and a DPoP proof signed by that key for this very request. What can be
// checked from a CheckRequest, and is: the proof's typ, alg, embedded public
// jwk and signature; htm against the HTTP method; htu against the scheme,
// authority and path Envoy reports (query and fragment ignored); iat within
// a window; ath against the access token; the jwk's RFC 7638 thumbprint
// against cnf.jkt; jti unique within the window (in memory, per replica).
// Not done: server-issued nonces (RFC 9449 section 8), and any other cnf
// member (x5t#S256 certificate binding, jwk, jku, kid), which is refused.

// Defaults of DPoPConfig.
const (
	DefaultDPoPMaxAge     = 60 * time.Second
	DefaultDPoPFutureSkew = 10 * time.Second
	DefaultDPoPReplaySize = 100_000
	// maxDPoPProofBytes bounds the DPoP header; an RSA-4096 jwk and the
	// claims fit in well under 4 KiB.
	maxDPoPProofBytes = 8 << 10
	maxJTIBytes       = 256
)

// DPoPConfig configures NewDPoPVerifier.
type DPoPConfig struct {
	// MaxAge is how old a proof's iat may be; zero means 60s. A jti is
	// remembered for as long as its proof is acceptable.
	MaxAge time.Duration
	// FutureSkew is how far ahead of our clock iat may be; zero means 10s.
	FutureSkew time.Duration
	// ReplaySize bounds the jti cache (entries); zero means 100000. When it
	// is full of unexpired entries, new proofs are refused (fail closed).
	ReplaySize int
	Now        func() time.Time // nil means time.Now
}

// DPoPVerifier checks DPoP proofs (RFC 9449 section 4.3). It is safe for
// concurrent use.
type DPoPVerifier struct {
	cfg DPoPConfig

	mu   sync.Mutex
	seen map[[sha256.Size]byte]struct{}
	exp  expiryHeap // the same keys, soonest expiry first
}

// NewDPoPVerifier returns a verifier with cfg's zero fields defaulted.
func NewDPoPVerifier(cfg DPoPConfig) *DPoPVerifier {
	if cfg.MaxAge <= 0 {
		cfg.MaxAge = DefaultDPoPMaxAge
	}
	if cfg.FutureSkew <= 0 {
		cfg.FutureSkew = DefaultDPoPFutureSkew
	}
	if cfg.ReplaySize <= 0 {
		cfg.ReplaySize = DefaultDPoPReplaySize
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &DPoPVerifier{cfg: cfg, seen: map[[sha256.Size]byte]struct{}{}}
}

// DPoPError is a DPoP proof that did not pass; Kind is one of the
// KindProof* kinds, or KindInternal when the replay cache is full.
type DPoPError struct {
	Kind Kind
	Err  error
}

func (e *DPoPError) Error() string { return e.Kind.String() + ": " + e.Err.Error() }
func (e *DPoPError) Unwrap() error { return e.Err }

func dpopErr(k Kind, format string, args ...any) error {
	return &DPoPError{Kind: k, Err: fmt.Errorf(format, args...)}
}

// DPoPRequest is what a proof is checked against.
type DPoPRequest struct {
	Method      string // HTTP method, e.g. "POST"
	Scheme      string // "http" or "https", as Envoy reports it
	Host        string // the :authority
	Path        string // path and query as received; the query is ignored
	AccessToken string // the token of Authorization: DPoP
	JKT         string // the token's cnf.jkt
}

// dpopClaims are the proof's claims; pointers tell absent from empty.
type dpopClaims struct {
	JTI *string     `json:"jti"`
	HTM *string     `json:"htm"`
	HTU *string     `json:"htu"`
	IAT numericDate `json:"iat"` // a JSON number: "1700000000" is refused
	ATH *string     `json:"ath"`
}

// Verify checks proof (the value of the one DPoP header) for req. Errors
// are *DPoPError. The jti is recorded only once every other check passed.
func (v *DPoPVerifier) Verify(proof string, req DPoPRequest) error {
	if len(proof) > maxDPoPProofBytes {
		return dpopErr(KindProofInvalid, "proof longer than %d bytes", maxDPoPProofBytes)
	}
	if strings.Count(proof, ".") != 2 {
		return dpopErr(KindProofInvalid, "not a compact JWS")
	}
	jws, err := jose.ParseSigned(proof, allowedJOSEAlgs)
	if err != nil {
		return dpopErr(KindProofInvalid, "%v", err)
	}
	if len(jws.Signatures) != 1 {
		return dpopErr(KindProofInvalid, "not one signature")
	}
	h := jws.Signatures[0].Protected
	if typ, _ := h.ExtraHeaders[jose.HeaderType].(string); !strings.EqualFold(typ, "dpop+jwt") {
		return dpopErr(KindProofInvalid, "typ %.32q, want dpop+jwt", typ)
	}
	jwk := h.JSONWebKey
	if jwk == nil || !jwk.Valid() {
		return dpopErr(KindProofInvalid, "no valid jwk header")
	}
	if !jwk.IsPublic() {
		return dpopErr(KindProofInvalid, "jwk holds a private key")
	}
	switch jwk.Key.(type) {
	case *rsa.PublicKey, *ecdsa.PublicKey, ed25519.PublicKey:
	default:
		return dpopErr(KindProofInvalid, "jwk of type %T", jwk.Key)
	}
	payload, err := jws.Verify(jwk)
	if err != nil {
		return dpopErr(KindProofInvalid, "signature: %v", err)
	}
	var c dpopClaims
	dec := json.NewDecoder(bytes.NewReader(payload))
	dec.UseNumber()
	if err := dec.Decode(&c); err != nil {
		return dpopErr(KindProofInvalid, "claims: %v", err)
	}
	if c.JTI == nil || c.HTM == nil || c.HTU == nil || !c.IAT.set || c.ATH == nil {
		return dpopErr(KindProofInvalid, "jti, htm, htu, iat and ath are required")
	}
	if n := len(*c.JTI); n == 0 || n > maxJTIBytes {
		return dpopErr(KindProofInvalid, "jti of %d bytes", n)
	}
	if *c.HTM != req.Method {
		return dpopErr(KindProofMismatch, "htm %.32q, request method %.32q", *c.HTM, req.Method)
	}
	want, ok := requestHTU(req.Scheme, req.Host, req.Path)
	if !ok {
		return dpopErr(KindProofMismatch, "request URI cannot be compared")
	}
	got, ok := proofHTU(*c.HTU)
	if !ok {
		return dpopErr(KindProofInvalid, "htu is not an absolute http(s) URI")
	}
	if got != want {
		return dpopErr(KindProofMismatch, "htu %.256q, request %.256q", got, want)
	}
	iat, now := c.IAT.t, v.cfg.Now()
	if iat.Before(now.Add(-v.cfg.MaxAge)) || iat.After(now.Add(v.cfg.FutureSkew)) {
		return dpopErr(KindProofStale, "iat %s outside [now-%s, now+%s]", iat.UTC().Format(time.RFC3339Nano), v.cfg.MaxAge, v.cfg.FutureSkew)
	}
	ath := sha256.Sum256([]byte(req.AccessToken))
	if *c.ATH != base64.RawURLEncoding.EncodeToString(ath[:]) {
		return dpopErr(KindProofMismatch, "ath is not the hash of the access token")
	}
	tp, err := jwk.Thumbprint(crypto.SHA256)
	if err != nil {
		return dpopErr(KindProofInvalid, "jwk thumbprint: %v", err)
	}
	if base64.RawURLEncoding.EncodeToString(tp) != req.JKT {
		return dpopErr(KindProofMismatch, "jwk thumbprint is not the token's cnf.jkt")
	}
	expires := iat.Add(v.cfg.MaxAge)
	return v.remember(req.JKT, *c.JTI, expires, now)
}

// remember records (jkt, jti) until expires; a pair already recorded and
// unexpired is a replay.
func (v *DPoPVerifier) remember(jkt, jti string, expires, now time.Time) error {
	key := sha256.Sum256([]byte(jkt + "\x00" + jti))
	v.mu.Lock()
	defer v.mu.Unlock()
	for len(v.exp) > 0 && !v.exp[0].at.After(now) {
		delete(v.seen, heap.Pop(&v.exp).(expiryEntry).key)
	}
	if _, dup := v.seen[key]; dup {
		return dpopErr(KindProofReplayed, "jti already used within the window")
	}
	if len(v.seen) >= v.cfg.ReplaySize {
		return &DPoPError{Kind: KindInternal, Err: errors.New("dpop replay cache full")}
	}
	v.seen[key] = struct{}{}
	heap.Push(&v.exp, expiryEntry{key: key, at: expires})
	return nil
}

// requestHTU is the request's URI without query, normalized as proofHTU.
func requestHTU(scheme, host, path string) (string, bool) {
	if scheme == "" || host == "" {
		return "", false
	}
	return proofHTU(scheme + "://" + host + path)
}

// proofHTU normalizes an htu for comparison (RFC 9449 section 4.3 step 9,
// RFC 3986 sections 6.2.2 and 6.2.3): scheme and host lower-cased, the
// default port dropped, percent-encoded unreserved characters decoded and
// other escapes in upper case, then dot segments removed (RFC 3986 section
// 5.2.4, so /a/../mcp and /%2E%2E/mcp are /mcp; an encoded '/' stays one
// segment), an empty path as "/"; query and fragment dropped. It refuses
// what is not an absolute http(s) URI with a host and no userinfo.
func proofHTU(s string) (string, bool) {
	u, err := url.Parse(s)
	if err != nil || u.Opaque != "" || u.User != nil || u.Hostname() == "" {
		return "", false
	}
	scheme := strings.ToLower(u.Scheme)
	if scheme != "http" && scheme != "https" {
		return "", false
	}
	host := strings.TrimSuffix(strings.ToLower(u.Host), ":") // an empty port is the default one
	host = strings.TrimSuffix(host, map[string]string{"http": ":80", "https": ":443"}[scheme])
	p, ok := normalizePercent(u.EscapedPath())
	if !ok {
		return "", false
	}
	if p = removeDotSegments(p); p == "" {
		p = "/"
	}
	return scheme + "://" + host + p, true
}

// normalizePercent decodes percent-encoded unreserved characters and
// upper-cases the hex digits of the rest (RFC 3986 section 6.2.2).
func normalizePercent(p string) (string, bool) {
	var b strings.Builder
	for i := 0; i < len(p); i++ {
		if p[i] != '%' {
			b.WriteByte(p[i])
			continue
		}
		if i+2 >= len(p) || !isHex(p[i+1]) || !isHex(p[i+2]) {
			return "", false
		}
		c := unhex(p[i+1])<<4 | unhex(p[i+2])
		if isUnreserved(c) {
			b.WriteByte(c)
		} else {
			b.WriteString("%" + strings.ToUpper(p[i+1:i+3]))
		}
		i += 2
	}
	return b.String(), true
}

// removeDotSegments is RFC 3986 section 5.2.4's remove_dot_segments, step
// by step: "." and ".." segments are interpreted and removed, a ".." above
// the root stays at the root, and every other segment, empty ones
// included, is kept.
func removeDotSegments(in string) string {
	out := make([]byte, 0, len(in))
	pop := func() { // remove the last segment and its preceding "/", if any
		if i := bytes.LastIndexByte(out, '/'); i >= 0 {
			out = out[:i]
		} else {
			out = out[:0]
		}
	}
	for in != "" {
		switch {
		case strings.HasPrefix(in, "../"):
			in = in[3:]
		case strings.HasPrefix(in, "./"):
			in = in[2:]
		case strings.HasPrefix(in, "/./"):
			in = in[2:]
		case in == "/.":
			in = "/"
		case strings.HasPrefix(in, "/../"):
			in = in[3:]
			pop()
		case in == "/..":
			in = "/"
			pop()
		case in == "." || in == "..":
			in = ""
		default:
			end := strings.IndexByte(in[1:], '/') + 1 // the first segment, with its leading "/" if any
			if end == 0 {
				end = len(in)
			}
			out, in = append(out, in[:end]...), in[end:]
		}
	}
	return string(out)
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func unhex(c byte) byte {
	switch {
	case c <= '9':
		return c - '0'
	case c >= 'a':
		return c - 'a' + 10
	default:
		return c - 'A' + 10
	}
}

func isUnreserved(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '.' || c == '_' || c == '~'
}

type expiryEntry struct {
	key [sha256.Size]byte
	at  time.Time
}

// expiryHeap is a min-heap of entries by expiry (container/heap).
type expiryHeap []expiryEntry

func (h expiryHeap) Len() int           { return len(h) }
func (h expiryHeap) Less(i, j int) bool { return h[i].at.Before(h[j].at) }
func (h expiryHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *expiryHeap) Push(x any)        { *h = append(*h, x.(expiryEntry)) }
func (h *expiryHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	*h = old[:len(old)-1]
	return e
}

// TokenBinding reads the cnf claim (RFC 7800) of a verified token: no cnf
// gives "", a cnf of exactly {"jkt": <non-empty string>} (RFC 9449 section
// 6) gives the thumbprint, anything else (x5t#S256 of RFC 8705, jwk, jku,
// kid, unknown members, or a cnf that is not an object) cannot be checked
// here and gives ok false.
func TokenBinding(claims map[string]any) (jkt string, ok bool) {
	raw, present := claims["cnf"]
	if !present {
		return "", true
	}
	cnf, isObj := raw.(map[string]any)
	if !isObj || len(cnf) != 1 {
		return "", false
	}
	s, isStr := cnf["jkt"].(string)
	if !isStr || s == "" {
		return "", false
	}
	return s, true
}

// ParseAuthorization splits credentials (RFC 9110 section 11.4; RFC 6750
// section 2.1: "Bearer" 1*SP b64token; RFC 9449 section 7.1: the same for
// "DPoP"). The scheme is case-insensitive and returned lower-cased; the
// token must be one b64token, so a second token, a comma or inner spaces
// make ok false. Trailing spaces are tolerated (Envoy strips them anyway).
func ParseAuthorization(h string) (scheme, token string, ok bool) {
	scheme, rest, found := strings.Cut(h, " ")
	if !found {
		return "", "", false
	}
	switch {
	case strings.EqualFold(scheme, "bearer"):
		scheme = "bearer"
	case strings.EqualFold(scheme, "dpop"):
		scheme = "dpop"
	default:
		return "", "", false
	}
	token = strings.TrimRight(strings.TrimLeft(rest, " "), " ")
	if !isB64Token(token) {
		return "", "", false
	}
	return scheme, token, true
}

// isB64Token reports whether s is RFC 6750's
// b64token = 1*( ALPHA / DIGIT / "-" / "." / "_" / "~" / "+" / "/" ) *"=".
func isB64Token(s string) bool {
	body := strings.TrimRight(s, "=")
	return body != "" && b64TokenChar.All(body)
}

// b64TokenChar holds the characters of a b64token before its '='s.
var b64TokenChar = byteset.Of(func(c byte) bool { return isUnreserved(c) || c == '+' || c == '/' })

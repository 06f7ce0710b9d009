package envoy

import (
	"errors"
	"fmt"
	"net/netip"
	"regexp"
	"slices"
	"strings"

	bootstrapv3 "github.com/envoyproxy/go-control-plane/envoy/config/bootstrap/v3"
	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	extauthzv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/ext_authz/v3"
	// Registered for protojson (typed_config of the response seam).
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/ext_proc/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	upstreamhttpv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/upstreams/http/v3"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/anypb"
	"sigs.k8s.io/yaml"

	// Register every typed_config type our configs use, so protojson can
	// resolve their Any URLs. An unregistered type is a load error, as it is
	// for an Envoy built without that extension.
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/access_loggers/stream/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/cors/v3"
	healthcheckv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/health_check/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/router/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/stateful_session/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/http/stateful_session/envelope/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/resource_monitors/downstream_connections/v3"
	fixedheapv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/resource_monitors/fixed_heap/v3"
)

// Filter and extension names, as Envoy's docs spell them.
const (
	ExtAuthzFilter = "envoy.filters.http.ext_authz"
	RouterFilter   = "envoy.filters.http.router"
	// HTTPProtocolOptionsKey is the typed_extension_protocol_options key
	// that selects a cluster's upstream HTTP version.
	HTTPProtocolOptionsKey = "envoy.extensions.upstreams.http.v3.HttpProtocolOptions"
	// ServerIDContextKey is the per-route context extension that names the
	// MCP server for the policy.
	ServerIDContextKey = "mcp_server"
	// AdminCluster is the cluster that reaches Envoy's own admin API, and
	// StatsPath the one admin path a listener may route to it.
	AdminCluster = "envoy_admin"
	StatsPath    = "/stats/prometheus"
	// OverloadFile is the overload-manager fragment passed to Envoy with
	// --config-yaml on top of sidecar.yaml.
	OverloadFile = "overload.yaml"
	// CorsFilter answers CORS preflights before ext_authz sees them.
	CorsFilter = "envoy.filters.http.cors"
	// MetadataCluster is extauthz's HTTP port, which serves RFC 9728
	// protected resource metadata under WellKnownProtectedResource.
	MetadataCluster = "extauthz_http"
	// WellKnownProtectedResource is the RFC 9728 well-known path prefix.
	WellKnownProtectedResource = "/.well-known/oauth-protected-resource"
)

// MetadataRoute reports whether r is a protected resource metadata route:
// it matches only WellKnownProtectedResource and the paths below it
// (path_separated_prefix, or an exact path under it) and routes to
// MetadataCluster. Only such routes may turn ext_authz off.
func MetadataRoute(r *routev3.Route) bool {
	m := r.GetMatch()
	if len(m.GetHeaders()) > 0 || len(m.GetQueryParameters()) > 0 || (m.GetCaseSensitive() != nil && !m.GetCaseSensitive().GetValue()) {
		return false
	}
	var ok bool
	switch p := m.GetPathSpecifier().(type) {
	case *routev3.RouteMatch_PathSeparatedPrefix:
		ok = p.PathSeparatedPrefix == WellKnownProtectedResource
	case *routev3.RouteMatch_Path:
		ok = p.Path == WellKnownProtectedResource || strings.HasPrefix(p.Path, WellKnownProtectedResource+"/")
	}
	return ok && r.GetRoute().GetCluster() == MetadataCluster && r.GetRoute().GetPrefixRewrite() == "" && r.GetRoute().GetRegexRewrite() == nil
}

// ExtAuthzDisabled reports whether a per-filter config map (of a route,
// virtual host or route configuration) turns ext_authz off: an
// ExtAuthzPerRoute with disabled, or a FilterConfig with disabled.
func ExtAuthzDisabled(m map[string]*anypb.Any) (bool, error) {
	a, ok := m[ExtAuthzFilter]
	if !ok {
		return false, nil
	}
	if a.MessageIs(&routev3.FilterConfig{}) {
		fc := &routev3.FilterConfig{}
		if err := a.UnmarshalTo(fc); err != nil {
			return false, err
		}
		if fc.GetDisabled() {
			return true, nil
		}
		if a = fc.GetConfig(); a == nil {
			return false, nil
		}
	}
	pr := &extauthzv3.ExtAuthzPerRoute{}
	if err := a.UnmarshalTo(pr); err != nil {
		return false, fmt.Errorf("%s per-route config: %w", ExtAuthzFilter, err)
	}
	return pr.GetDisabled(), nil
}

// ValidateBootstrapYAML parses an Envoy v3 bootstrap written in YAML and
// validates it: YAML → JSON (duplicate keys are an error) → protojson into
// bootstrapv3.Bootstrap with unknown fields rejected and every Any resolved,
// then protoc-gen-validate's ValidateAll on the bootstrap and on the message
// inside every Any (ValidateAll alone does not look inside an Any), and
// finally every cluster a route or gRPC service names must be defined in
// static_resources. It does not do what only a running Envoy can (DNS,
// sockets, extension factories' own checks); errors name the first problem
// found in each step.
func ValidateBootstrapYAML(y []byte) (*bootstrapv3.Bootstrap, error) {
	j, err := yaml.YAMLToJSONStrict(y)
	if err != nil {
		return nil, fmt.Errorf("yaml: %w", err)
	}
	b := &bootstrapv3.Bootstrap{}
	if err := (protojson.UnmarshalOptions{DiscardUnknown: false}).Unmarshal(j, b); err != nil {
		return nil, fmt.Errorf("protojson: %w", err)
	}
	if err := b.ValidateAll(); err != nil {
		return nil, fmt.Errorf("validate: %w", err)
	}
	refs := map[string]bool{}
	if err := walk(b.ProtoReflect(), refs); err != nil {
		return nil, err
	}
	defined := map[string]bool{}
	for _, c := range b.GetStaticResources().GetClusters() {
		defined[c.GetName()] = true
	}
	var missing []string
	for name := range refs {
		if !defined[name] {
			missing = append(missing, name)
		}
	}
	if len(missing) > 0 {
		slices.Sort(missing)
		return nil, fmt.Errorf("undefined clusters: %s", strings.Join(missing, ", "))
	}
	return b, nil
}

type validator interface{ ValidateAll() error }

// walk visits every message under m, validates the content of every Any and
// records in refs the clusters that routes and Envoy gRPC services name.
func walk(m protoreflect.Message, refs map[string]bool) error {
	switch v := m.Interface().(type) {
	case *anypb.Any:
		inner, err := v.UnmarshalNew()
		if err != nil {
			return fmt.Errorf("any %s: %w", v.GetTypeUrl(), err)
		}
		if iv, ok := inner.(validator); ok {
			if err := iv.ValidateAll(); err != nil {
				return fmt.Errorf("validate %s: %w", v.GetTypeUrl(), err)
			}
		}
		return walk(inner.ProtoReflect(), refs)
	case *routev3.RouteAction:
		if c := v.GetCluster(); c != "" {
			refs[c] = true
		}
	case *corev3.GrpcService_EnvoyGrpc:
		refs[v.GetClusterName()] = true
	}
	var err error
	m.Range(func(fd protoreflect.FieldDescriptor, val protoreflect.Value) bool {
		switch {
		case fd.IsList() && fd.Message() != nil:
			l := val.List()
			for i := 0; i < l.Len() && err == nil; i++ {
				err = walk(l.Get(i).Message(), refs)
			}
		case fd.IsMap() && fd.MapValue().Message() != nil:
			val.Map().Range(func(_ protoreflect.MapKey, mv protoreflect.Value) bool {
				err = walk(mv.Message(), refs)
				return err == nil
			})
		case !fd.IsList() && !fd.IsMap() && fd.Message() != nil:
			err = walk(val.Message(), refs)
		}
		return err == nil
	})
	return err
}

// HTTPConnectionManager is one HTTP connection manager found in a listener.
type HTTPConnectionManager struct {
	Listener string
	HCM      *hcmv3.HttpConnectionManager
}

// HTTPConnectionManagers returns the HTTP connection managers of every
// static listener's filter chains, in order.
func HTTPConnectionManagers(b *bootstrapv3.Bootstrap) ([]HTTPConnectionManager, error) {
	var out []HTTPConnectionManager
	for _, l := range b.GetStaticResources().GetListeners() {
		for _, fc := range l.GetFilterChains() {
			for _, f := range fc.GetFilters() {
				tc := f.GetTypedConfig()
				if tc == nil || !tc.MessageIs(&hcmv3.HttpConnectionManager{}) {
					continue
				}
				h := &hcmv3.HttpConnectionManager{}
				if err := tc.UnmarshalTo(h); err != nil {
					return nil, fmt.Errorf("listener %s: %w", l.GetName(), err)
				}
				out = append(out, HTTPConnectionManager{Listener: l.GetName(), HCM: h})
			}
		}
	}
	return out, nil
}

// Forwards reports whether h routes any request to an upstream cluster (as
// opposed to answering everything itself, like a health listener). The
// exact-path GET StatsPath route to AdminCluster does not count:
// CheckInvariants holds it to that shape.
func Forwards(h *hcmv3.HttpConnectionManager) bool {
	for _, vh := range h.GetRouteConfig().GetVirtualHosts() {
		for _, r := range vh.GetRoutes() {
			if r.GetRoute() != nil && r.GetRoute().GetCluster() != AdminCluster {
				return true
			}
		}
	}
	return false
}

// checkAdminRoutes reports every route of h to AdminCluster that is not an
// exact-path StatsPath match: any other path would expose the admin API
// (drain, quit, config dump) beyond loopback.
func checkAdminRoutes(h HTTPConnectionManager, fail func(string, ...any)) {
	for _, vh := range h.HCM.GetRouteConfig().GetVirtualHosts() {
		for _, r := range vh.GetRoutes() {
			ra := r.GetRoute()
			if ra == nil || ra.GetCluster() != AdminCluster {
				continue
			}
			m := r.GetMatch()
			if m.GetPath() != StatsPath || ra.GetPrefixRewrite() != "" || ra.GetRegexRewrite() != nil {
				fail("listener %s: route %v exposes the admin API beyond %s", h.Listener, m, StatsPath)
			}
		}
	}
}

// ExtAuthz returns h's ext_authz filter config and its index in the filter
// chain, or index -1 if there is none.
func ExtAuthz(h *hcmv3.HttpConnectionManager) (*extauthzv3.ExtAuthz, int, error) {
	for i, f := range h.GetHttpFilters() {
		if f.GetName() != ExtAuthzFilter {
			continue
		}
		ea := &extauthzv3.ExtAuthz{}
		if err := f.GetTypedConfig().UnmarshalTo(ea); err != nil {
			return nil, i, fmt.Errorf("%s: %w", ExtAuthzFilter, err)
		}
		return ea, i, nil
	}
	return nil, -1, nil
}

// Cluster returns the static cluster called name, or nil.
func Cluster(b *bootstrapv3.Bootstrap, name string) *clusterv3.Cluster {
	for _, c := range b.GetStaticResources().GetClusters() {
		if c.GetName() == name {
			return c
		}
	}
	return nil
}

// FoldedSpellings are client header names that CGI, WSGI, PHP and Rack
// upstreams read as headers the service sets or decides on
// (x-mcp-principal, mcp-method, content-type, ...). A listener that admits
// underscores must let ext_authz see them, so the service can remove them.
var FoldedSpellings = []string{"x_mcp_principal", "x-mcp_tool", "mcp_method", "mcp_session_id", "content_type", "transfer_encoding"}

// AllowsHeader reports whether ext_authz's allowed_headers pass the request
// header name (lower-case) to the authorization service.
func AllowsHeader(ea *extauthzv3.ExtAuthz, name string) bool {
	for _, p := range ea.GetAllowedHeaders().GetPatterns() {
		switch {
		case p.GetExact() != "" && p.GetExact() == name,
			p.GetPrefix() != "" && strings.HasPrefix(name, strings.ToLower(p.GetPrefix())),
			p.GetSafeRegex() != nil && regexp.MustCompile(`^(?:`+p.GetSafeRegex().GetRegex()+`)$`).MatchString(name):
			return true
		}
	}
	return false
}

// CheckInvariants reports, joined, every way b breaks the properties the
// mcp-extauthz deployment relies on:
//   - every HTTP connection manager that forwards to a cluster runs ext_authz
//     before the router, so no request reaches an MCP server unchecked;
//   - ext_authz uses transport API V3, a gRPC service with a timeout,
//     failure_mode_allow false, and with_request_body with a
//     max_request_bytes, allow_partial_message false and pack_as_bytes true;
//   - header names with underscores, which upstreams fold onto the headers
//     the service sets or decides on, never reach an MCP server as sent:
//     the HTTP connection manager rejects them
//     (common_http_protocol_options.headers_with_underscores_action
//     REJECT_REQUEST), or ext_authz forwards every such name to the service,
//     which removes those that fold onto its own (FoldedSpellings);
//   - the gRPC cluster speaks HTTP/2;
//   - ext_authz is never off for a virtual host or route configuration, and
//     off for a route only on metadata routes (MetadataRoute);
//   - the response seam: ext_proc runs after ext_authz and before the
//     router, enabled in the chain; ext_authz clears the route cache, so
//     routes are picked on the MethodHeader Check set; ext_proc fails
//     closed (failure_mode_allow false in the filter and in every
//     per-route config, tools/call's included), never in observability
//     mode, never BUFFERED_PARTIAL anywhere, request body mode NONE in the
//     filter's processing_mode, NONE or BUFFERED in allowed_override_modes
//     and on routes, allow_mode_override only with allowed_override_modes
//     (none FULL_DUPLEX_STREAMED), every ProcessorOverride the processor
//     can send on an enabled route allowed (Envoy ignores any other, and
//     the response would pass unprocessed), its gRPC cluster speaks
//     HTTP/2, and every enabled route forwards ExtAuthzNamespace;
//   - every route to an MCP server (any upstream but the metadata route's
//     and the admin API) has a side stream (the per-route configs merged
//     as ExtProcFor does) that sends the response headers, so no answer
//     reaches a client unread, and removes accept-encoding upstream; the
//     metadata route has none; per path, a route chosen by headers
//     forwards and checks (ext_authz per-route config) as its header-less
//     fallback does, no route sends the request headers (Check's metadata
//     carries what the processor reads), the route each of ListMethods
//     with a sealed cursor picks (the header matchers evaluated on
//     MethodHeader, CursorHeader and :method) sends the request body
//     BUFFERED, and only routes those alone pick do;
//   - Envoy's admin listens on loopback only, and a listener reaches it
//     (cluster AdminCluster, whose endpoint must be the admin address) only
//     for the exact path StatsPath.
func CheckInvariants(b *bootstrapv3.Bootstrap) error {
	var errs []error
	fail := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }

	admin := b.GetAdmin().GetAddress().GetSocketAddress().GetAddress()
	if ip, err := netip.ParseAddr(admin); err != nil || !ip.IsLoopback() {
		fail("admin address %q is not loopback", admin)
	}
	if c := Cluster(b, AdminCluster); c != nil {
		as := b.GetAdmin().GetAddress().GetSocketAddress()
		want := fmt.Sprintf("%s:%d", as.GetAddress(), as.GetPortValue())
		if eps := Endpoints(c); len(eps) != 1 || eps[0] != want {
			fail("cluster %s: endpoints %v, want the admin address %s", AdminCluster, eps, want)
		}
	}
	hcms, err := HTTPConnectionManagers(b)
	if err != nil {
		return err
	}
	forwarding := 0
	for _, h := range hcms {
		checkAdminRoutes(h, fail)
		if !Forwards(h.HCM) {
			continue
		}
		forwarding++
		ea, at, err := ExtAuthz(h.HCM)
		if err != nil {
			return err
		}
		if got := h.HCM.GetCommonHttpProtocolOptions().GetHeadersWithUnderscoresAction(); got != corev3.HttpProtocolOptions_REJECT_REQUEST {
			for _, name := range FoldedSpellings {
				if !AllowsHeader(ea, name) {
					fail("listener %s: headers_with_underscores_action %v and ext_authz does not forward %q: want REJECT_REQUEST, or every name with '_' in allowed_headers", h.Listener, got, name)
					break
				}
			}
		}
		router := slices.IndexFunc(h.HCM.GetHttpFilters(), func(f *hcmv3.HttpFilter) bool { return f.GetName() == RouterFilter })
		switch {
		case ea == nil:
			fail("listener %s: forwards without %s", h.Listener, ExtAuthzFilter)
			continue
		case router < 0:
			fail("listener %s: no %s", h.Listener, RouterFilter)
		case at > router:
			fail("listener %s: %s after %s", h.Listener, ExtAuthzFilter, RouterFilter)
		}
		if err := checkExtProc(b, h, at, router, ea.GetClearRouteCache(), fail); err != nil {
			return err
		}
		rc := h.HCM.GetRouteConfig()
		if off, err := ExtAuthzDisabled(rc.GetTypedPerFilterConfig()); err != nil || off {
			fail("listener %s: ext_authz off for the whole route configuration (%v)", h.Listener, err)
		}
		for _, vh := range rc.GetVirtualHosts() {
			if off, err := ExtAuthzDisabled(vh.GetTypedPerFilterConfig()); err != nil || off {
				fail("listener %s: ext_authz off for virtual host %s (%v)", h.Listener, vh.GetName(), err)
			}
			for _, r := range vh.GetRoutes() {
				off, err := ExtAuthzDisabled(r.GetTypedPerFilterConfig())
				if err != nil {
					fail("listener %s: route %v: %v", h.Listener, r.GetMatch(), err)
				} else if off && !MetadataRoute(r) {
					fail("listener %s: ext_authz off on route %v, which is not a protected resource metadata route", h.Listener, r.GetMatch())
				}
			}
		}
		if ea.GetTransportApiVersion() != corev3.ApiVersion_V3 {
			fail("listener %s: transport_api_version %v, want V3", h.Listener, ea.GetTransportApiVersion())
		}
		if ea.GetFailureModeAllow() {
			fail("listener %s: failure_mode_allow is true", h.Listener)
		}
		if ea.GetFilterEnabled() != nil || ea.GetFilterEnabledMetadata() != nil {
			fail("listener %s: ext_authz may be disabled at runtime (filter_enabled)", h.Listener)
		}
		body := ea.GetWithRequestBody()
		switch {
		case body == nil:
			fail("listener %s: no with_request_body", h.Listener)
		case body.GetMaxRequestBytes() == 0:
			fail("listener %s: with_request_body.max_request_bytes unset", h.Listener)
		case body.GetAllowPartialMessage():
			fail("listener %s: with_request_body.allow_partial_message is true", h.Listener)
		case !body.GetPackAsBytes():
			fail("listener %s: with_request_body.pack_as_bytes is false", h.Listener)
		}
		gs := ea.GetGrpcService()
		if gs.GetTimeout().AsDuration() <= 0 {
			fail("listener %s: grpc_service.timeout unset", h.Listener)
		}
		name := gs.GetEnvoyGrpc().GetClusterName()
		if name == "" {
			fail("listener %s: ext_authz is not an envoy_grpc service", h.Listener)
			continue
		}
		if !HTTP2(Cluster(b, name)) {
			fail("cluster %s: ext_authz gRPC cluster without HTTP/2", name)
		}
	}
	if forwarding == 0 {
		fail("no listener forwards to a cluster")
	}
	return errors.Join(errs...)
}

// HTTP2 reports whether c is set to speak HTTP/2 upstream through
// HttpProtocolOptions.explicit_http_config.http2_protocol_options.
func HTTP2(c *clusterv3.Cluster) bool {
	a, ok := c.GetTypedExtensionProtocolOptions()[HTTPProtocolOptionsKey]
	if !ok {
		return false
	}
	o := &upstreamhttpv3.HttpProtocolOptions{}
	if err := a.UnmarshalTo(o); err != nil {
		return false
	}
	return o.GetExplicitHttpConfig().GetHttp2ProtocolOptions() != nil
}

// Endpoints returns the socket addresses ("host:port") of c's static
// load_assignment.
func Endpoints(c *clusterv3.Cluster) []string {
	var out []string
	for _, le := range c.GetLoadAssignment().GetEndpoints() {
		for _, lb := range le.GetLbEndpoints() {
			sa := lb.GetEndpoint().GetAddress().GetSocketAddress()
			out = append(out, fmt.Sprintf("%s:%d", sa.GetAddress(), sa.GetPortValue()))
		}
	}
	return out
}

// ReadinessEndpoints returns the endpoints ("host:port") that Envoy's own
// readiness depends on: those of every cluster that a health_check filter
// names in cluster_min_healthy_percentages (at a percentage above zero) and
// that has active health checks. A filter that fails to decode is an error.
func ReadinessEndpoints(b *bootstrapv3.Bootstrap) ([]string, error) {
	hcms, err := HTTPConnectionManagers(b)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, h := range hcms {
		for _, f := range h.HCM.GetHttpFilters() {
			if !f.GetTypedConfig().MessageIs(&healthcheckv3.HealthCheck{}) {
				continue
			}
			hc := &healthcheckv3.HealthCheck{}
			if err := f.GetTypedConfig().UnmarshalTo(hc); err != nil {
				return nil, fmt.Errorf("listener %s: %w", h.Listener, err)
			}
			for name, pct := range hc.GetClusterMinHealthyPercentages() {
				if c := Cluster(b, name); c != nil && pct.GetValue() > 0 && len(c.GetHealthChecks()) > 0 {
					out = append(out, Endpoints(c)...)
				}
			}
		}
	}
	slices.Sort(out)
	return out, nil
}

// HeapLimit returns the overload manager's fixed_heap max_heap_size_bytes,
// or 0 when b has no fixed_heap resource monitor.
func HeapLimit(b *bootstrapv3.Bootstrap) (uint64, error) {
	for _, rm := range b.GetOverloadManager().GetResourceMonitors() {
		fh := &fixedheapv3.FixedHeapConfig{}
		if !rm.GetTypedConfig().MessageIs(fh) {
			continue
		}
		if err := rm.GetTypedConfig().UnmarshalTo(fh); err != nil {
			return 0, err
		}
		return fh.GetMaxHeapSizeBytes(), nil
	}
	return 0, nil
}

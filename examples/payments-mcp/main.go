// Command payments-mcp is the example MCP server behind the service in the
// Helm chart's sidecar ci values and the kustomize sidecar overlay: a small
// "payments" server over Streamable HTTP (MCP 2025-03-26 to 2025-11-25),
// stateless, answering each POST with one JSON response. Its tools, resources
// and prompt are the targets of examples/policy.yaml. It trusts the
// x-mcp-principal header the authorization service sets, and says so in
// its answers. It is a demonstration, not a payments system: nothing is
// paid, read or deleted.
//
//	payments-mcp --listen 0.0.0.0:3000
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:3000", "HTTP listen address; the MCP endpoint is /mcp")
	flag.Parse()
	log := slog.New(slog.NewJSONHandler(os.Stderr, nil))
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	srv := &http.Server{Addr: *listen, Handler: Handler(), ReadHeaderTimeout: 5 * time.Second}
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	log.Info("serving MCP", "addr", *listen, "path", "/mcp")
	if err := srv.ListenAndServe(); err != nil && !errors.Is(err, http.ErrServerClosed) {
		log.Error("stopped", "error", err)
		os.Exit(1)
	}
}

// versions are the MCP revisions this server speaks, newest first.
var versions = []string{"2025-11-25", "2025-06-18", "2025-03-26"}

type request struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id,omitempty"`
	Method  string          `json:"method"`
	Params  json.RawMessage `json:"params,omitempty"`
}

type rpcError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

// Handler serves MCP on /mcp: POST carries one JSON-RPC message; GET (no
// server-initiated stream here) and other methods get 405.
func Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/mcp", func(w http.ResponseWriter, r *http.Request) {
		switch r.Method {
		case http.MethodPost:
		case http.MethodDelete:
			w.WriteHeader(http.StatusOK) // stateless: nothing to end
			return
		default:
			w.Header().Set("Allow", "POST, DELETE")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		var req request
		if err == nil {
			err = json.Unmarshal(body, &req)
		}
		if err != nil || req.JSONRPC != "2.0" || req.Method == "" {
			reply(w, nil, nil, &rpcError{-32600, "Invalid Request"})
			return
		}
		if len(req.ID) == 0 { // a notification
			w.WriteHeader(http.StatusAccepted)
			return
		}
		result, rerr := call(req, r.Header.Get("x-mcp-principal"))
		reply(w, req.ID, result, rerr)
	})
	return mux
}

func reply(w http.ResponseWriter, id json.RawMessage, result any, rerr *rpcError) {
	if id == nil {
		id = json.RawMessage("null")
	}
	resp := map[string]any{"jsonrpc": "2.0", "id": id}
	if rerr != nil {
		resp["error"] = rerr
	} else {
		resp["result"] = result
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(resp)
}

var tools = []map[string]any{
	{"name": "search", "description": "Search the payments knowledge base.",
		"inputSchema": schema(map[string]any{"query": map[string]any{"type": "string"}, "limit": map[string]any{"type": "integer"}}, "query")},
	{"name": "issue_refund", "description": "Refund an amount in minor units (cents).",
		"inputSchema": schema(map[string]any{"currency": map[string]any{"type": "string"}, "amountMinor": map[string]any{"type": "integer"}}, "currency", "amountMinor")},
	{"name": "read_file", "description": "Read a file below /data.",
		"inputSchema": schema(map[string]any{"path": map[string]any{"type": "string"}}, "path")},
	{"name": "delete_repo", "description": "Delete a repository (the policy denies it).",
		"inputSchema": schema(map[string]any{"repo": map[string]any{"type": "string"}}, "repo")},
}

func schema(props map[string]any, required ...string) map[string]any {
	return map[string]any{"type": "object", "properties": props, "required": required}
}

var reports = []string{"file:///reports/q3.pdf", "file:///reports/q4.pdf"}

// call answers one request. principal is the x-mcp-principal header.
func call(req request, principal string) (any, *rpcError) {
	var p struct {
		ProtocolVersion string         `json:"protocolVersion"`
		Name            string         `json:"name"`
		URI             string         `json:"uri"`
		Arguments       map[string]any `json:"arguments"`
	}
	if len(req.Params) > 0 && json.Unmarshal(req.Params, &p) != nil {
		return nil, &rpcError{-32602, "Invalid params"}
	}
	who := principal
	if who == "" {
		who = "anonymous"
	}
	text := func(s string) map[string]any {
		return map[string]any{"content": []any{map[string]any{"type": "text", "text": s}}}
	}
	switch req.Method {
	case "initialize":
		v := versions[0]
		if slices.Contains(versions, p.ProtocolVersion) {
			v = p.ProtocolVersion
		}
		return map[string]any{
			"protocolVersion": v,
			"capabilities":    map[string]any{"tools": map[string]any{}, "resources": map[string]any{}, "prompts": map[string]any{}},
			"serverInfo":      map[string]any{"name": "payments", "version": "0.1.0"},
		}, nil
	case "ping":
		return map[string]any{}, nil
	case "tools/list":
		return map[string]any{"tools": tools}, nil
	case "tools/call":
		switch p.Name {
		case "search":
			return text(fmt.Sprintf("%s searched for %v: no results in this example", who, p.Arguments["query"])), nil
		case "issue_refund":
			return text(fmt.Sprintf("%s refunded %v %v (not really: an example)", who, p.Arguments["amountMinor"], p.Arguments["currency"])), nil
		case "read_file":
			return text(fmt.Sprintf("%s read %v (an example: no file is opened)", who, p.Arguments["path"])), nil
		case "delete_repo":
			return text("nothing deleted: an example"), nil
		}
		return nil, &rpcError{-32602, "Unknown tool: " + p.Name}
	case "resources/list":
		var rs []any
		for _, u := range reports {
			rs = append(rs, map[string]any{"uri": u, "name": strings.TrimPrefix(u, "file:///reports/"), "mimeType": "text/plain"})
		}
		return map[string]any{"resources": rs}, nil
	case "resources/templates/list":
		return map[string]any{"resourceTemplates": []any{}}, nil
	case "resources/read":
		if !slices.Contains(reports, p.URI) {
			return nil, &rpcError{-32002, "Resource not found"}
		}
		return map[string]any{"contents": []any{map[string]any{"uri": p.URI, "mimeType": "text/plain", "text": "report for " + who}}}, nil
	case "prompts/list":
		return map[string]any{"prompts": []any{map[string]any{"name": "summarize", "description": "Summarize a report."}}}, nil
	case "prompts/get":
		if p.Name != "summarize" {
			return nil, &rpcError{-32602, "Unknown prompt: " + p.Name}
		}
		return map[string]any{"messages": []any{map[string]any{"role": "user", "content": map[string]any{"type": "text", "text": "Summarize the report."}}}}, nil
	case "completion/complete":
		return map[string]any{"completion": map[string]any{"values": []any{}}}, nil
	case "logging/setLevel":
		return map[string]any{}, nil
	}
	return nil, &rpcError{-32601, "Method not found"}
}

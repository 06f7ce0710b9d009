// Package gosdk verifies mcp-extauthz's signed decisions (package
// mcpdecision) in a server built with the official Go MCP SDK
// (github.com/modelcontextprotocol/go-sdk, Streamable HTTP): one line,
//
//	server.AddReceivingMiddleware(gosdk.Middleware(verifier))
//
// and every request and notification the server receives is checked
// before its handler runs. The arguments digest is recomputed over the
// arguments as the SDK decodes them for a tool (the SDK's JSON decoder,
// github.com/segmentio/encoding/json, into a map[string]any, as its
// AddTool does before the input schema), not over the bytes on the wire.
// A refused call is answered with the JSON-RPC error
// mcpdecision.CodeRefused whose data.reason is the mcpdecision.Reason; the
// handler never runs. An admitted one reaches the handler with the
// verified statement in its context (mcpdecision.FromContext).
//
// Not covered: GET and DELETE (no JSON-RPC message reaches a middleware),
// the client's answers to server requests, transports without HTTP
// headers (stdio: every message is refused, decision_missing).
package gosdk

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	segjson "github.com/segmentio/encoding/json"

	"github.com/mcp-extauthz/mcp-extauthz/mcpdecision"
)

// Middleware returns the receiving middleware that verifies every message
// with v (see the package comment). OnRefused, when given, is called with
// each refusal (for the server's log; it holds no argument values).
func Middleware(v *mcpdecision.Verifier, onRefused ...func(ctx context.Context, method string, err *mcpdecision.Error)) mcp.Middleware {
	return func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			var values []string
			if extra := req.GetExtra(); extra != nil && extra.Header != nil {
				values = extra.Header.Values(mcpdecision.Header)
			}
			call, err := callOf(method, req.GetParams())
			var st *mcpdecision.Statement
			if err == nil {
				st, err = v.Verify(ctx, values, call)
			} else {
				err = &mcpdecision.Error{Reason: mcpdecision.ReasonMismatch, Detail: "params: " + err.Error()}
			}
			if err != nil {
				var me *mcpdecision.Error
				if !errors.As(err, &me) {
					me = &mcpdecision.Error{Reason: mcpdecision.ReasonUnavailable, Detail: err.Error()}
				}
				for _, f := range onRefused {
					f(ctx, method, me)
				}
				return nil, RefusalError(me.Reason)
			}
			return next(mcpdecision.NewContext(ctx, st), method, req)
		}
	}
}

// RefusalError is the JSON-RPC error a refused call is answered with:
// code mcpdecision.CodeRefused, data {"reason": reason}.
func RefusalError(reason mcpdecision.Reason) *jsonrpc.Error {
	data, _ := json.Marshal(map[string]string{"reason": string(reason)})
	return &jsonrpc.Error{Code: mcpdecision.CodeRefused, Message: "the signed decision does not admit this call: " + string(reason), Data: data}
}

// callOf is the Call of a message as the SDK decoded it: for tools/call
// the raw arguments decoded as AddTool decodes them; for every other
// method its params through encoding/json into a map (mcpdecision.CallOf).
func callOf(method string, params mcp.Params) (mcpdecision.Call, error) {
	if p, ok := params.(*mcp.CallToolParamsRaw); ok && p != nil {
		args := map[string]any{}
		if len(p.Arguments) > 0 {
			if err := segjson.Unmarshal(p.Arguments, &args); err != nil {
				return mcpdecision.Call{}, err
			}
		}
		c := mcpdecision.Call{Method: method, Target: p.Name}
		if len(args) > 0 {
			c.Arguments = args
		}
		return c, nil
	}
	var m map[string]any
	if params != nil {
		b, err := json.Marshal(params)
		if err != nil {
			return mcpdecision.Call{}, err
		}
		if err := json.Unmarshal(b, &m); err != nil {
			return mcpdecision.Call{}, err
		}
	}
	return mcpdecision.CallOf(method, m), nil
}

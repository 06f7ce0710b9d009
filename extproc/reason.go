package extproc

// JSON-RPC 2.0 error codes the seam's refusals carry (section 5.1).
const (
	CodeInvalidParams = -32602 // a params.cursor not sealed for this caller
	CodeInternalError = -32603 // every other refusal: the answer cannot be passed
)

// refusal is how the seam answers one of its reasons: status is the HTTP
// status of its local reply (an ImmediateResponse, sent before the
// upstream's headers went out), 0 when the reason refuses an answer whose
// headers already went out (the upstream's status stands and the refused
// body or SSE event is replaced by the error); code is the JSON-RPC
// error.code of the error body.
type refusal struct {
	status int
	code   int
}

// refusals maps every reason of the seam's closed set (the Reason*
// constants) to its answer; TestRefusalTable proves it total and checks it
// against the table of docs/seam.md, "The response seam (ext_proc)".
var refusals = map[string]refusal{
	ReasonNoMetadata:    {status: 503, code: CodeInternalError},
	ReasonInvalidCursor: {status: 400, code: CodeInvalidParams},
	ReasonRedirect:      {status: 502, code: CodeInternalError},
	ReasonCompressed:    {status: 502, code: CodeInternalError},
	ReasonContentType:   {status: 502, code: CodeInternalError},
	ReasonCharset:       {status: 502, code: CodeInternalError},
	ReasonUnexpected:    {code: CodeInternalError},
	ReasonUnfilterable:  {code: CodeInternalError},
	ReasonTooLarge:      {code: CodeInternalError},
	ReasonResultOnError: {code: CodeInternalError},
}

// refusalOfReason returns reason's answer; a reason outside the table
// (none, by TestRefusalTable) answers as a 502 internal error.
func refusalOfReason(reason string) refusal {
	if r, ok := refusals[reason]; ok {
		return r
	}
	return refusal{status: 502, code: CodeInternalError}
}

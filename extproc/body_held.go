package extproc

import (
	"context"

	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"
)

// heldChunk answers one chunk of a held call answer (modeHeld): held until
// the end of stream, then released as jsonBody decides it (filtered, a task
// it creates bound; refused when it cannot be read or answers a request
// this stream does not carry). Past MaxBody the answer is refused: an
// error body goes out for it and nothing after it passes (the headers went
// downstream already, without content-length).
func (st *stream) heldChunk(ctx context.Context, b *extprocv3.HttpBody) *extprocv3.ProcessingResponse {
	if st.broken {
		return bodyResponse([]byte{}, nil) // refused: nothing more passes
	}
	st.held = append(st.held, b.GetBody()...)
	if len(st.held) > st.s.cfg.MaxBody {
		st.held, st.broken = nil, true
		st.refusedList(ReasonTooLarge, nil)
		st.endReceipt() // outcome_unknown: the client gets the error
		return bodyResponse(errorBody(st.rpcID, ReasonTooLarge, "the response is too large to filter"), nil)
	}
	if !b.GetEndOfStream() {
		return bodyResponse([]byte{}, nil) // held
	}
	out := st.held
	st.held = nil
	body, _ := st.decideJSON(ctx, out)
	if body == nil {
		return bodyResponse(out, nil)
	}
	return bodyResponse(body, nil)
}

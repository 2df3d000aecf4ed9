package main

import (
	"time"

	cardgamesv1 "example.com/cardgames/gen/cardgames/v1"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/status"
)

// rpcError is what a failed call tells a client (docs/api.md, "Errors"): the gRPC code and
// message, and the details the engine puts in the grpc-status-details-bin trailer. A refusal
// by gRPC itself (an unknown method, a request over the size limit) has only Code and Message.
type rpcError struct {
	Code       string
	Message    string
	Domain     string
	Reason     string
	Metadata   map[string]string
	RequestID  string
	RetryDelay time.Duration
	// View is the caller's current view, which an ABORTED STALE_SEQUENCE error carries: decide
	// again on it rather than asking for it.
	View *cardgamesv1.View
}

func (e *rpcError) Error() string {
	if e.Reason == "" {
		return e.Code + ": " + e.Message
	}
	return e.Code + " " + e.Reason + ": " + e.Message
}

// describe reads a failed call's status and details. status.Details() unpacks each
// google.protobuf.Any by its type URL from the types linked into the program: errdetails for
// google.rpc's, the generated package for cardgames.v1.View, which is why both are imported
// here even where a program never names a View.
func describe(err error) *rpcError {
	st := status.Convert(err)
	out := &rpcError{Code: st.Code().String(), Message: st.Message()}
	for _, detail := range st.Details() {
		switch d := detail.(type) {
		case *errdetails.ErrorInfo:
			out.Domain, out.Reason, out.Metadata = d.Domain, d.Reason, d.Metadata
		case *errdetails.RequestInfo:
			out.RequestID = d.RequestId
		case *errdetails.RetryInfo:
			if delay := d.GetRetryDelay(); delay != nil {
				out.RetryDelay = time.Duration(delay.Seconds)*time.Second + time.Duration(delay.Nanos)
			}
		case *cardgamesv1.View:
			out.View = d
		}
	}
	return out
}

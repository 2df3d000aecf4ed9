package main

import (
	"errors"
	"testing"
	"time"

	cardgamesv1 "example.com/cardgames/gen/cardgames/v1"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"
)

// The details the engine sends, built the way it builds them: each one found by its type,
// the generated View among them (an Any of a type the program did not link would be skipped).
func TestDescribeReadsEveryDetail(t *testing.T) {
	st, err := status.New(codes.Aborted, "the match moved on").WithDetails(
		&errdetails.ErrorInfo{Domain: "cardgames.v1", Reason: "STALE_SEQUENCE", Metadata: map[string]string{"seq": "7"}},
		&cardgamesv1.View{MatchId: "m1", Seq: 7},
		&errdetails.RetryInfo{RetryDelay: &durationpb.Duration{Seconds: 1, Nanos: 500000000}},
		&errdetails.RequestInfo{RequestId: "req-1"},
	)
	if err != nil {
		t.Fatal(err)
	}
	got := describe(st.Err())
	if got.Code != "Aborted" || got.Reason != "STALE_SEQUENCE" || got.Domain != "cardgames.v1" ||
		got.Metadata["seq"] != "7" || got.RequestID != "req-1" || got.RetryDelay != 1500*time.Millisecond {
		t.Fatalf("describe: %+v", got)
	}
	if got.View == nil || got.View.GetSeq() != 7 || got.View.GetMatchId() != "m1" {
		t.Fatalf("the View detail was not read: %+v", got.View)
	}
	if got.Error() != "Aborted STALE_SEQUENCE: the match moved on" {
		t.Fatalf("Error(): %q", got.Error())
	}
}

// A refusal without details (gRPC's own, or an error that is no status at all) keeps its code
// and message and has no reason.
func TestDescribeWithoutDetails(t *testing.T) {
	got := describe(status.Error(codes.Unimplemented, "unknown method"))
	if got.Code != "Unimplemented" || got.Reason != "" || got.View != nil || got.Error() != "Unimplemented: unknown method" {
		t.Fatalf("describe: %+v", got)
	}
	if got := describe(errors.New("boom")); got.Code != "Unknown" || got.Message != "boom" {
		t.Fatalf("describe of a plain error: %+v", got)
	}
}

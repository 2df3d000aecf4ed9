package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"

	cardgamesv1 "example.com/cardgames/gen/cardgames/v1"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// stubAPI answers the calls of run and refused offline: a match with two open seats whose
// seat 0 is to act, a watch stream that sends events, and SubmitAction as submit says. A call
// it does not answer panics (the embedded client is nil).
type stubAPI struct {
	cardgamesv1.CardGamesServiceClient
	t      *testing.T
	joined int32
	events []*cardgamesv1.WatchMatchResponse
	submit func(ctx context.Context, in *cardgamesv1.SubmitActionRequest) (*cardgamesv1.SubmitActionResponse, error)
}

func (s *stubAPI) CreateMatch(context.Context, *cardgamesv1.CreateMatchRequest, ...grpc.CallOption) (*cardgamesv1.CreateMatchResponse, error) {
	return &cardgamesv1.CreateMatchResponse{Match: &cardgamesv1.MatchSummary{MatchId: "m1"}}, nil
}

func (s *stubAPI) JoinMatch(context.Context, *cardgamesv1.JoinMatchRequest, ...grpc.CallOption) (*cardgamesv1.JoinMatchResponse, error) {
	s.joined++
	return &cardgamesv1.JoinMatchResponse{MatchId: "m1", Seat: s.joined - 1, SeatToken: "token"}, nil
}

func (s *stubAPI) GetView(context.Context, *cardgamesv1.GetViewRequest, ...grpc.CallOption) (*cardgamesv1.GetViewResponse, error) {
	toAct := int32(0)
	return &cardgamesv1.GetViewResponse{View: &cardgamesv1.View{MatchId: "m1", ToAct: &toAct}}, nil
}

func (s *stubAPI) WatchMatch(context.Context, *cardgamesv1.WatchMatchRequest, ...grpc.CallOption) (cardgamesv1.CardGamesService_WatchMatchClient, error) {
	return &stubStream{events: s.events}, nil
}

func (s *stubAPI) SubmitAction(ctx context.Context, in *cardgamesv1.SubmitActionRequest, _ ...grpc.CallOption) (*cardgamesv1.SubmitActionResponse, error) {
	if s.submit == nil {
		s.t.Fatalf("unexpected SubmitAction %v", in)
	}
	return s.submit(ctx, in)
}

// stubStream sends its events, then ends (io.EOF).
type stubStream struct {
	grpc.ClientStream
	events []*cardgamesv1.WatchMatchResponse
}

func (s *stubStream) Recv() (*cardgamesv1.WatchMatchResponse, error) {
	if len(s.events) == 0 {
		return nil, io.EOF
	}
	event := s.events[0]
	s.events = s.events[1:]
	return event, nil
}

// refused (main.go): an action the engine accepted where it must refuse it is an error, and
// no "refused" line is printed for it (README: exit status 1 unless every step went as expected).
func TestRefusedActionThatIsAcceptedIsAnError(t *testing.T) {
	api := &stubAPI{t: t, submit: func(context.Context, *cardgamesv1.SubmitActionRequest) (*cardgamesv1.SubmitActionResponse, error) {
		return &cardgamesv1.SubmitActionResponse{Seq: 1}, nil
	}}
	var out bytes.Buffer
	err := refused(context.Background(), api, json.NewEncoder(&out), "m1", 1, "trump:S", nil, "")
	if err == nil || err.Error() != "seat 1's trump:S was accepted" {
		t.Fatalf("refused of an accepted action: %v", err)
	}
	if out.Len() != 0 {
		t.Fatalf("printed %q", out.String())
	}
}

// refused prints the refusal's google.rpc details (docs/api.md, "Errors"), the seq of an
// ABORTED STALE_SEQUENCE's View among them, and sends x-request-id only when given one.
func TestRefusedPrintsTheDetails(t *testing.T) {
	var sentIDs [][]string
	api := &stubAPI{t: t, submit: func(ctx context.Context, in *cardgamesv1.SubmitActionRequest) (*cardgamesv1.SubmitActionResponse, error) {
		md, _ := metadata.FromOutgoingContext(ctx)
		sentIDs = append(sentIDs, md.Get("x-request-id"))
		if in.GetExpectedSeq() != 3 {
			t.Errorf("expected_seq sent: %v", in.ExpectedSeq)
		}
		st, err := status.New(codes.Aborted, "stale").WithDetails(
			&errdetails.ErrorInfo{Domain: "cardgames.v1", Reason: "STALE_SEQUENCE", Metadata: map[string]string{"seq": "4"}},
			&cardgamesv1.View{MatchId: "m1", Seq: 4},
			&errdetails.RequestInfo{RequestId: "req-1"},
		)
		if err != nil {
			t.Fatal(err)
		}
		return nil, st.Err()
	}}
	var out bytes.Buffer
	seq := int64(3)
	for _, requestID := range []string{"req-1", ""} {
		if err := refused(context.Background(), api, json.NewEncoder(&out), "m1", 0, "trump:S", &seq, requestID); err != nil {
			t.Fatal(err)
		}
	}
	if len(sentIDs) != 2 || len(sentIDs[0]) != 1 || sentIDs[0][0] != "req-1" || len(sentIDs[1]) != 0 {
		t.Fatalf("x-request-id sent: %q", sentIDs)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 2 {
		t.Fatalf("lines: %q", lines)
	}
	var line map[string]interface{}
	if err := json.Unmarshal([]byte(lines[0]), &line); err != nil {
		t.Fatal(err)
	}
	if line["step"] != "refused" || line["seat"] != 0.0 || line["action"] != "trump:S" || line["code"] != "Aborted" ||
		line["reason"] != "STALE_SEQUENCE" || line["domain"] != "cardgames.v1" || line["message"] != "stale" ||
		line["request_id"] != "req-1" || line["view_seq"] != 4.0 {
		t.Fatalf("line: %v", line)
	}
	if metadata, ok := line["metadata"].(map[string]interface{}); !ok || len(metadata) != 1 || metadata["seq"] != "4" {
		t.Fatalf("metadata: %v", line["metadata"])
	}
}

// run expects the seat's stream to open with a SNAPSHOT of its view with legal actions
// (docs/api.md, "A match from start to end", step 4): anything else is an error before any
// action is sent.
func TestRunWantsASnapshotWithLegalActions(t *testing.T) {
	legal := []*cardgamesv1.Action{{Notation: "trump:S"}}
	hand := []*cardgamesv1.Card{{Code: "QS"}}
	for _, c := range []struct {
		name  string
		event *cardgamesv1.WatchMatchResponse
	}{
		{"an ACTION first", &cardgamesv1.WatchMatchResponse{Kind: cardgamesv1.EventKind_EVENT_KIND_ACTION,
			View: &cardgamesv1.View{LegalActions: legal, Hand: hand}}},
		{"a SNAPSHOT without legal actions", &cardgamesv1.WatchMatchResponse{Kind: cardgamesv1.EventKind_EVENT_KIND_SNAPSHOT,
			View: &cardgamesv1.View{Hand: hand}}},
	} {
		var out bytes.Buffer
		err := run(context.Background(), &stubAPI{t: t, events: []*cardgamesv1.WatchMatchResponse{c.event}}, json.NewEncoder(&out))
		if err == nil || !strings.HasPrefix(err.Error(), "expected a SNAPSHOT with legal actions, got ") {
			t.Errorf("%s: %v", c.name, err)
		}
		if strings.Contains(out.String(), `"snapshot"`) {
			t.Errorf("%s: printed %q", c.name, out.String())
		}
	}
}

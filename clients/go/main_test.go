package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
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
// seat 0 is to act, a watch stream that sends events, then streamErr once (if set), then
// ends, and SubmitAction as submit says. fail makes a call fail; a call the stub does not
// answer panics (the embedded client is nil).
type stubAPI struct {
	cardgamesv1.CardGamesServiceClient
	t         *testing.T
	joined    int32
	fail      map[string]error
	noToAct   bool
	events    []*cardgamesv1.WatchMatchResponse
	streamErr error
	submit    func(ctx context.Context, in *cardgamesv1.SubmitActionRequest) (*cardgamesv1.SubmitActionResponse, error)
}

func (s *stubAPI) CreateMatch(context.Context, *cardgamesv1.CreateMatchRequest, ...grpc.CallOption) (*cardgamesv1.CreateMatchResponse, error) {
	if err := s.fail["CreateMatch"]; err != nil {
		return nil, err
	}
	return &cardgamesv1.CreateMatchResponse{Match: &cardgamesv1.MatchSummary{MatchId: "m1"}}, nil
}

func (s *stubAPI) JoinMatch(context.Context, *cardgamesv1.JoinMatchRequest, ...grpc.CallOption) (*cardgamesv1.JoinMatchResponse, error) {
	if err := s.fail["JoinMatch"]; err != nil {
		return nil, err
	}
	s.joined++
	return &cardgamesv1.JoinMatchResponse{MatchId: "m1", Seat: s.joined - 1, SeatToken: fmt.Sprintf("token%d", s.joined-1)}, nil
}

func (s *stubAPI) GetView(context.Context, *cardgamesv1.GetViewRequest, ...grpc.CallOption) (*cardgamesv1.GetViewResponse, error) {
	if err := s.fail["GetView"]; err != nil {
		return nil, err
	}
	view := &cardgamesv1.View{MatchId: "m1", Phase: "trump_choice"}
	if !s.noToAct {
		toAct := int32(0)
		view.ToAct = &toAct
	}
	return &cardgamesv1.GetViewResponse{View: view}, nil
}

func (s *stubAPI) WatchMatch(context.Context, *cardgamesv1.WatchMatchRequest, ...grpc.CallOption) (cardgamesv1.CardGamesService_WatchMatchClient, error) {
	if err := s.fail["WatchMatch"]; err != nil {
		return nil, err
	}
	return &stubStream{events: s.events, err: s.streamErr}, nil
}

func (s *stubAPI) SubmitAction(ctx context.Context, in *cardgamesv1.SubmitActionRequest, _ ...grpc.CallOption) (*cardgamesv1.SubmitActionResponse, error) {
	if s.submit == nil {
		s.t.Fatalf("unexpected SubmitAction %v", in)
	}
	return s.submit(ctx, in)
}

// stubStream sends its events, then err once (if set), then ends (io.EOF).
type stubStream struct {
	grpc.ClientStream
	events []*cardgamesv1.WatchMatchResponse
	err    error
}

func (s *stubStream) Recv() (*cardgamesv1.WatchMatchResponse, error) {
	if len(s.events) == 0 {
		err := s.err
		s.err = nil
		if err == nil {
			err = io.EOF
		}
		return nil, err
	}
	event := s.events[0]
	s.events = s.events[1:]
	return event, nil
}

// refusal is a status with the ErrorInfo the engine sends (docs/api.md, "Errors").
func refusal(t *testing.T, code codes.Code, reason string) error {
	st, err := status.New(code, strings.ToLower(reason)).WithDetails(&errdetails.ErrorInfo{Domain: "cardgames.v1", Reason: reason})
	if err != nil {
		t.Fatal(err)
	}
	return st.Err()
}

// playingStub is an engine that plays the run as the real one does: seat 0 to act at seq 0
// with one card in hand that it may not play, refusing the illegal action, the other
// seat's action and the stale one, and accepting the legal one (seq 1), which its stream
// then reports.
func playingStub(t *testing.T) *stubAPI {
	toAct, seat := int32(0), int32(0)
	trump := &cardgamesv1.Action{Notation: "trump:S"}
	answers := []error{refusal(t, codes.FailedPrecondition, "ILLEGAL_ACTION"), refusal(t, codes.FailedPrecondition, "NOT_YOUR_TURN"),
		nil, refusal(t, codes.Aborted, "STALE_SEQUENCE")}
	calls := 0
	return &stubAPI{t: t,
		events: []*cardgamesv1.WatchMatchResponse{
			{Kind: cardgamesv1.EventKind_EVENT_KIND_SNAPSHOT, View: &cardgamesv1.View{
				Phase: "trump_choice", Hand: []*cardgamesv1.Card{{Code: "QS"}}, LegalActions: []*cardgamesv1.Action{trump}}},
			{Kind: cardgamesv1.EventKind_EVENT_KIND_ACTION, Seq: 1, Seat: &seat, Action: trump, By: cardgamesv1.Actor_ACTOR_PLAYER},
		},
		submit: func(context.Context, *cardgamesv1.SubmitActionRequest) (*cardgamesv1.SubmitActionResponse, error) {
			calls++
			if calls > len(answers) {
				t.Fatalf("SubmitAction call %d", calls)
			}
			if err := answers[calls-1]; err != nil {
				return nil, err
			}
			return &cardgamesv1.SubmitActionResponse{Seq: 1, Action: trump, View: &cardgamesv1.View{Seq: 1, ToAct: &toAct}}, nil
		},
	}
}

// Against an engine that answers as expected, run prints its steps and ends without error
// (README: exit status 0 when every step went as expected).
func TestRunPlaysItsSteps(t *testing.T) {
	var out bytes.Buffer
	if err := run(context.Background(), playingStub(t), json.NewEncoder(&out)); err != nil {
		t.Fatal(err)
	}
	var steps []string
	for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		var step map[string]interface{}
		if err := json.Unmarshal([]byte(line), &step); err != nil {
			t.Fatal(err)
		}
		steps = append(steps, step["step"].(string))
	}
	if strings.Join(steps, " ") != "created joined joined snapshot refused refused submitted event refused" {
		t.Fatalf("steps: %q", steps)
	}
}

// Any call that fails ends the run with its error (README: exit status 1 and "error: <code>
// <reason>: <message>"), and so does a view with no seat to act or a hand whose every card is
// a legal play (no illegal action to show): run does not go on as if the step had worked.
func TestRunStopsAtAFailedStep(t *testing.T) {
	unavailable := refusal(t, codes.Unavailable, "DRAINING")
	for _, c := range []struct {
		name  string
		setup func(s *stubAPI)
		want  string
	}{
		{"CreateMatch fails", func(s *stubAPI) { s.fail = map[string]error{"CreateMatch": unavailable} }, "Unavailable DRAINING: draining"},
		{"JoinMatch fails", func(s *stubAPI) { s.fail = map[string]error{"JoinMatch": unavailable} }, "Unavailable DRAINING: draining"},
		{"GetView fails", func(s *stubAPI) { s.fail = map[string]error{"GetView": unavailable} }, "Unavailable DRAINING: draining"},
		{"no seat to act", func(s *stubAPI) { s.noToAct = true }, "Unknown: no seat is to act in trump_choice"},
		{"WatchMatch fails", func(s *stubAPI) { s.fail = map[string]error{"WatchMatch": unavailable} }, "Unavailable DRAINING: draining"},
		{"the stream fails before its SNAPSHOT", func(s *stubAPI) { s.events, s.streamErr = nil, unavailable }, "Unavailable DRAINING: draining"},
		{"every card is a legal play", func(s *stubAPI) {
			s.events[0].View.LegalActions = append(s.events[0].View.LegalActions, &cardgamesv1.Action{Notation: "play:QS"})
			s.submit = nil
		}, "Unknown: every card of the hand is a legal play: no illegal action to show"},
		{"the legal action fails", func(s *stubAPI) {
			submit := s.submit
			s.submit = func(ctx context.Context, in *cardgamesv1.SubmitActionRequest) (*cardgamesv1.SubmitActionResponse, error) {
				if in.GetClientActionId() != "" {
					return nil, unavailable
				}
				return submit(ctx, in)
			}
		}, "Unavailable DRAINING: draining"},
		{"the stream fails before the action's event", func(s *stubAPI) { s.events, s.streamErr = s.events[:1], unavailable }, "Unavailable DRAINING: draining"},
	} {
		api := playingStub(t)
		c.setup(api)
		var out bytes.Buffer
		err := run(context.Background(), api, json.NewEncoder(&out))
		if err == nil || describe(err).Error() != c.want {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
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

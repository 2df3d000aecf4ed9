// Command cardgames-go plays the opening of a Japanese Joker match through the stubs that
// protoc-gen-go and protoc-gen-go-grpc generate from proto/cardgames/v1 (docs/api.md,
// "Generating stubs in another language"), to show, and let the tests check, that the
// documented Go route works end to end: it creates a match with two open seats, joins both,
// watches as the seat to act, has an illegal action, an action out of turn and a stale one
// refused (printing each error's google.rpc details), and submits a legal action, which the
// watch stream then reports. Each step is one JSON line on stdout.
package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	cardgamesv1 "example.com/cardgames/gen/cardgames/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
)

func main() {
	given, flags, err := parseCommandLine(os.Args[1:])
	if errors.Is(err, flag.ErrHelp) {
		flags.Usage()
		os.Exit(0)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "error:", err) // never a value: it may be a secret
		flags.Usage()
		os.Exit(2)
	}
	ctx, cancel := context.WithTimeout(context.Background(), given.timeout)
	defer cancel()
	// grpc-go reads trailers up to 16 MiB as it is: an ABORTED error's View needs no setting.
	conn, err := grpc.DialContext(ctx, given.target, grpc.WithInsecure())
	if err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(1)
	}
	defer conn.Close()
	if err := run(ctx, cardgamesv1.NewCardGamesServiceClient(conn), json.NewEncoder(os.Stdout)); err != nil {
		fmt.Fprintln(os.Stderr, "error:", describe(err))
		os.Exit(1)
	}
}

// step is one line of the output.
type step map[string]interface{}

// asSeat is ctx carrying a seat token: every call about a match sends it this way.
func asSeat(ctx context.Context, token string) context.Context {
	return metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+token)
}

// newID is a random client id (client_action_id, x-request-id): 16 bytes, hex.
func newID() string {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		panic(err)
	}
	return hex.EncodeToString(b)
}

func run(ctx context.Context, api cardgamesv1.CardGamesServiceClient, out *json.Encoder) error {
	open := &cardgamesv1.SeatSpec{Kind: &cardgamesv1.SeatSpec_Open{Open: &cardgamesv1.OpenSeat{}}}
	created, err := api.CreateMatch(ctx, &cardgamesv1.CreateMatchRequest{
		Game:    "japanese_joker",
		Seats:   []*cardgamesv1.SeatSpec{open, open},
		Options: map[string]*cardgamesv1.OptionValue{"target_score": {Value: &cardgamesv1.OptionValue_IntValue{IntValue: 11}}},
	})
	if err != nil {
		return err
	}
	matchID := created.GetMatch().GetMatchId()
	_ = out.Encode(step{"step": "created", "match_id": matchID, "status": created.GetMatch().GetStatus().String()})

	tokens := make([]string, 2)
	for i := range tokens {
		joined, err := api.JoinMatch(ctx, &cardgamesv1.JoinMatchRequest{MatchId: matchID, PlayerName: fmt.Sprintf("go %d", i)})
		if err != nil {
			return err
		}
		tokens[joined.GetSeat()] = joined.GetSeatToken()
		_ = out.Encode(step{"step": "joined", "seat": joined.GetSeat()})
	}
	first, err := api.GetView(asSeat(ctx, tokens[0]), &cardgamesv1.GetViewRequest{MatchId: matchID})
	if err != nil {
		return err
	}
	if first.GetView().ToAct == nil {
		return fmt.Errorf("no seat is to act in %s", first.GetView().GetPhase())
	}
	actor := first.GetView().GetToAct()
	other := 1 - actor

	// The acting seat's stream: its first event is a SNAPSHOT with the seat's view.
	watchCtx, stopWatching := context.WithCancel(asSeat(ctx, tokens[actor]))
	defer stopWatching()
	stream, err := api.WatchMatch(watchCtx, &cardgamesv1.WatchMatchRequest{MatchId: matchID})
	if err != nil {
		return err
	}
	snapshot, err := stream.Recv()
	if err != nil {
		return err
	}
	view := snapshot.GetView()
	legal := map[string]bool{}
	for _, a := range view.GetLegalActions() {
		legal[a.GetNotation()] = true
	}
	if snapshot.GetKind() != cardgamesv1.EventKind_EVENT_KIND_SNAPSHOT || len(legal) == 0 {
		return fmt.Errorf("expected a SNAPSHOT with legal actions, got %s", snapshot.GetKind())
	}
	_ = out.Encode(step{"step": "snapshot", "seat": actor, "seq": view.GetSeq(), "phase": view.GetPhase(),
		"hand": len(view.GetHand()), "legal": len(legal)})

	// Refused: a card of the seat's own hand when playing it is not allowed (ILLEGAL_ACTION),
	// sent with our own request id, which the RequestInfo detail gives back.
	var illegal string
	for _, card := range view.GetHand() {
		if !legal["play:"+card.GetCode()] {
			illegal = "play:" + card.GetCode()
			break
		}
	}
	if illegal == "" {
		return errors.New("every card of the hand is a legal play: no illegal action to show")
	}
	if err := refused(asSeat(ctx, tokens[actor]), api, out, matchID, actor, illegal, nil, newID()); err != nil {
		return err
	}
	// Refused: the other seat's action while it is not its turn (NOT_YOUR_TURN).
	if err := refused(asSeat(ctx, tokens[other]), api, out, matchID, other, view.GetLegalActions()[0].GetNotation(), nil, ""); err != nil {
		return err
	}

	action := view.GetLegalActions()[0].GetNotation()
	seenAt := view.GetSeq()
	done, err := api.SubmitAction(asSeat(ctx, tokens[actor]), &cardgamesv1.SubmitActionRequest{
		MatchId: matchID, Action: action, ExpectedSeq: &seenAt, ClientActionId: newID(),
	})
	if err != nil {
		return err
	}
	_ = out.Encode(step{"step": "submitted", "seat": actor, "action": done.GetAction().GetNotation(), "seq": done.GetSeq()})
	for {
		event, err := stream.Recv()
		if err == io.EOF {
			return errors.New("the watch stream ended before the action's event")
		}
		if err != nil {
			return err
		}
		if event.GetKind() == cardgamesv1.EventKind_EVENT_KIND_ACTION && event.GetSeq() == done.GetSeq() {
			_ = out.Encode(step{"step": "event", "kind": event.GetKind().String(), "seq": event.GetSeq(),
				"seat": event.GetSeat(), "action": event.GetAction().GetNotation(), "by": event.GetBy().String()})
			break
		}
	}
	stopWatching()

	// Refused: the seat to act now decides on the view from before the action (STALE_SEQUENCE,
	// with its current View as a detail).
	next := done.GetView().GetToAct()
	return refused(asSeat(ctx, tokens[next]), api, out, matchID, next, action, &seenAt, "")
}

// refused submits an action that the engine must refuse and prints the refusal's details;
// an accepted one is an error. A requestID, when given, is sent as x-request-id, which names
// the call in the server's logs and comes back in the RequestInfo detail.
func refused(ctx context.Context, api cardgamesv1.CardGamesServiceClient, out *json.Encoder, matchID string,
	seat int32, action string, expectedSeq *int64, requestID string) error {
	if requestID != "" {
		ctx = metadata.AppendToOutgoingContext(ctx, "x-request-id", requestID)
	}
	_, err := api.SubmitAction(ctx, &cardgamesv1.SubmitActionRequest{MatchId: matchID, Action: action, ExpectedSeq: expectedSeq})
	if err == nil {
		return fmt.Errorf("seat %d's %s was accepted", seat, action)
	}
	e := describe(err)
	line := step{"step": "refused", "seat": seat, "action": action, "code": e.Code, "reason": e.Reason,
		"domain": e.Domain, "metadata": e.Metadata, "request_id": e.RequestID, "message": e.Message}
	if requestID != "" {
		line["sent_request_id"] = requestID
	}
	if e.View != nil {
		line["view_seq"] = e.View.GetSeq()
	}
	_ = out.Encode(line)
	return nil
}

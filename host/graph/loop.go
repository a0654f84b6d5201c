package graph

import (
	"fmt"
	"slices"
)

// decideLoop adds a loop's steps to d: start when ready, a first round,
// the until condition and the review to ask for, and — once nothing of
// the loop holds a position — the next round or the end.
func (s *State) decideLoop(d *Decision, v *VertexState, ready, active bool) {
	l, def := v.Loop, v.Def.Loop
	switch {
	case l.Finished != nil:
		return
	case !l.Started:
		if ready {
			d.Transitions = append(d.Transitions, Transition{EventLoopStarted, LoopStartedData{Loop: v.Def.ID, MaxRounds: def.MaxRounds}})
		}
		return
	case len(l.Rounds) == 0:
		if !s.stopped || v.Def.Kind == KindFinalizer {
			d.Transitions = append(d.Transitions, Transition{EventRoundStarted, RoundStartedData{Loop: v.Def.ID, Round: 1}})
		}
		return
	}
	r := l.Current()
	if failed := failedMember(r); failed != nil {
		if !active {
			f := failed.Failure
			d.Transitions = append(d.Transitions, Transition{EventLoopFinished, LoopFinishedData{Loop: v.Def.ID, Outcome: LoopFailed,
				Rounds: r.Round, Code: f.Code, Message: fmt.Sprintf("member %s failed: %s", failed.Def.ID, f.Message), Position: f.Position}})
		}
		return
	}
	if c := r.Condition; c != nil && c.Error != "" {
		d.Transitions = append(d.Transitions, Transition{EventLoopFinished, LoopFinishedData{Loop: v.Def.ID, Outcome: LoopFailed,
			Rounds: r.Round, Code: CodeInputRender, Message: "the until condition did not render: " + c.Error}})
		return
	}
	if rv := r.Review; rv != nil && rv.Accepted {
		d.Transitions = append(d.Transitions, Transition{EventLoopFinished, LoopFinishedData{Loop: v.Def.ID, Outcome: LoopPassed, Rounds: r.Round}})
		return
	}
	if roundOver(r) {
		switch {
		case r.Round >= def.MaxRounds:
			d.Transitions = append(d.Transitions, Transition{EventLoopFinished, LoopFinishedData{Loop: v.Def.ID, Outcome: LoopFailed,
				Rounds: r.Round, Code: CodeLoopExhausted, Message: fmt.Sprintf("no review passed in %d rounds (max_rounds)", def.MaxRounds)}})
		case !s.stopped || v.Def.Kind == KindFinalizer:
			d.Transitions = append(d.Transitions, Transition{EventRoundStarted, RoundStartedData{Loop: v.Def.ID, Round: r.Round + 1}})
		}
		return
	}
	review := l.Member(r.Round, def.Review)
	switch {
	case othersPassed(r, def.Review) && def.Until != "" && r.Condition == nil:
		d.Asks = append(d.Asks, Ask{Kind: AskCondition, Vertex: v, Round: r.Round})
	case r.Review == nil && (review.Status == StatusPassed || review.VerdictFailure):
		d.Asks = append(d.Asks, Ask{Kind: AskReview, Vertex: v, Round: r.Round, Unit: review})
	}
}

// failedMember returns a member of round r that failed for good (its
// verdict aside), or nil.
func failedMember(r *RoundState) *NodeState {
	for _, m := range r.Members {
		if m.Status == StatusFailed && !m.VerdictFailure {
			return m
		}
	}
	return nil
}

// roundOver reports whether round r ended without passing: its review
// failed, or its until condition was not met.
func roundOver(r *RoundState) bool {
	return r.Review != nil && !r.Review.Accepted || r.Condition != nil && !r.Condition.Met
}

// othersPassed reports whether every member of r but the review passed.
func othersPassed(r *RoundState, review string) bool {
	for _, m := range r.Members {
		if m.Def.ID != review && m.Status != StatusPassed {
			return false
		}
	}
	return true
}

// readyMembers returns the idle members of a running loop's current round
// whose dependencies passed in that round. The review member comes last:
// after every other member passed and the until condition, if any, was
// met.
func (s *State) readyMembers(v *VertexState) []*NodeState {
	l, def := v.Loop, v.Def.Loop
	r := l.Current()
	if l.Finished != nil || r == nil || failedMember(r) != nil || roundOver(r) {
		return nil
	}
	var out []*NodeState
	for _, m := range r.Members {
		if m.Status != StatusIdle {
			continue
		}
		ok := true
		for _, dep := range m.Def.DependsOn {
			ok = ok && l.Member(r.Round, dep).Status == StatusPassed
		}
		if m.Def.ID == def.Review {
			ok = ok && othersPassed(r, def.Review) && (def.Until == "" || r.Condition != nil && r.Condition.Met)
		}
		if ok {
			out = append(out, m)
		}
	}
	return out
}

// applyStep folds the loop and for_each events. A transition must be one
// the graph decides at this prefix, an answer one it asks for; anything
// else is ErrInvalidEvent.
func (s *State) applyStep(v any) error {
	switch d := v.(type) {
	case ExpandedData:
		return s.applyExpanded(d)
	case LoopStartedData, RoundStartedData, LoopFinishedData:
		return s.applyTransition(v)
	case ConditionData:
		ask, err := s.asked(AskCondition, d.Loop, d.Round)
		if err != nil {
			return err
		}
		if d.Which != ConditionUntil || d.Error != "" && d.Met {
			return fmt.Errorf("%w: loop %q round %d condition %q met=%v error %q", ErrInvalidEvent, d.Loop, d.Round, d.Which, d.Met, d.Error)
		}
		ask.Vertex.Loop.Current().Condition = &d
	case ReviewedData:
		ask, err := s.asked(AskReview, d.Loop, d.Round)
		if err != nil {
			return err
		}
		st := d.Outcome.Status
		if d.Member != ask.Unit.Def.ID || d.Position != ask.Unit.Position || (st != VerdictPass && st != VerdictFail) || d.Accepted != (st == VerdictPass) {
			return fmt.Errorf("%w: review of loop %q round %d (%s at %s, %s, accepted %v) does not fit its review member %s",
				ErrInvalidEvent, d.Loop, d.Round, d.Member, d.Position, st, d.Accepted, ask.Unit.Position)
		}
		ask.Vertex.Loop.Current().Review = &d
	}
	return nil
}

// asked returns the pending ask of kind about vertex id (and round), or
// ErrInvalidEvent.
func (s *State) asked(kind AskKind, id string, round int) (Ask, error) {
	for _, a := range s.Decide().Asks {
		if a.Kind == kind && a.Vertex.Def.ID == id && a.Round == round {
			return a, nil
		}
	}
	return Ask{}, fmt.Errorf("%w: %s for %q round %d, which the graph does not ask for at this point", ErrInvalidEvent, askNames[kind], id, round)
}

var askNames = [...]string{AskExpand: "an expansion", AskCondition: "a condition", AskReview: "a review"}

// applyTransition folds graph:loop-started, graph:loop-round-started or
// graph:loop-finished after checking the graph decides exactly it now.
func (s *State) applyTransition(v any) error {
	found := false
	for _, t := range s.Decide().Transitions {
		found = found || sameStep(t.Data, v)
	}
	if !found {
		return fmt.Errorf("%w: %+v is not a step the graph takes at this point", ErrInvalidEvent, v)
	}
	switch d := v.(type) {
	case LoopStartedData:
		vx := s.Vertex(d.Loop)
		vx.Loop.Started = true
		s.refresh(vx)
	case RoundStartedData:
		vx := s.Vertex(d.Loop)
		r := &RoundState{Round: d.Round}
		for i := range vx.Def.Loop.Members {
			r.Members = append(r.Members, s.newUnit(&NodeState{Def: &vx.Def.Loop.Members[i], Vertex: d.Loop, Loop: d.Loop, Round: d.Round, v: vx}))
		}
		vx.Loop.Rounds = append(vx.Loop.Rounds, r)
		s.refresh(vx)
	case LoopFinishedData:
		vx := s.Vertex(d.Loop)
		vx.Loop.Finished = &d
		if d.Outcome == LoopFailed {
			vx.failure = &FailedData{Node: d.Loop, Position: d.Position, Code: d.Code, Message: d.Message}
		}
		s.refresh(vx)
		if d.Outcome == LoopFailed && vx.Def.Kind == KindRequired && s.def.StopOnError {
			s.stop()
		}
	}
	return nil
}

// sameStep reports whether a recorded transition is the one decided: every
// field but a failure's message, which is for people and may be worded
// differently by another version.
func sameStep(decided, recorded any) bool {
	if a, ok := decided.(LoopFinishedData); ok {
		b, ok := recorded.(LoopFinishedData)
		a.Message = b.Message
		return ok && a == b
	}
	if _, ok := decided.(ExpandedData); ok {
		return false // not comparable; applyExpanded checks expansions
	}
	return decided == recorded
}

// applyExpanded folds graph:node-expanded: a static for_each's keys must
// equal its items', a dynamic one's must be asked for, unique and within
// max_items (or carry the failure). The instances come to be, in key
// order.
func (s *State) applyExpanded(d ExpandedData) error {
	vx := s.Vertex(d.Node)
	if vx == nil || vx.Def.ForEach == nil {
		return fmt.Errorf("%w: expansion of %q, which is not a for_each node", ErrInvalidEvent, d.Node)
	}
	fe := vx.Def.ForEach
	if fe.Source == "" {
		found := false
		for _, t := range s.Decide().Transitions {
			if e, ok := t.Data.(ExpandedData); ok && e.Node == d.Node && slices.Equal(e.Keys, d.Keys) && d.Code == "" {
				found = true
			}
		}
		if !found {
			return fmt.Errorf("%w: expansion of %q with keys %q is not the step the graph takes at this point", ErrInvalidEvent, d.Node, d.Keys)
		}
	} else {
		if _, err := s.asked(AskExpand, d.Node, 0); err != nil {
			return err
		}
		if dup := duplicateKey(d.Keys); dup != nil || len(d.Keys) > fe.MaxItems || d.Code != "" && len(d.Keys) > 0 {
			return fmt.Errorf("%w: expansion of %q has %d keys (max_items %d, a repeat %v, code %q)", ErrInvalidEvent, d.Node, len(d.Keys), fe.MaxItems, dup != nil, d.Code)
		}
	}
	vx.Expansion = &d
	if d.Code != "" {
		vx.failure = &FailedData{Node: d.Node, Code: d.Code, Message: d.Message}
		s.refresh(vx)
		if vx.Def.Kind == KindRequired && s.def.StopOnError {
			s.stop()
		}
		return nil
	}
	vx.ix.idle = newBitSet(len(d.Keys))
	for i, k := range d.Keys {
		vx.Instances = append(vx.Instances, s.newUnit(&NodeState{Def: vx.Def, Vertex: d.Node, Instance: true, Key: k, v: vx, idx: i}))
		vx.ix.idle.set(i, true)
	}
	s.refresh(vx)
	return nil
}

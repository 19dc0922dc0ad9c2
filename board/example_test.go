package board_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/promptd/promptd/board"
	"github.com/promptd/promptd/sqlstore"
)

// A worker claims the first pending record, runs it and completes it with
// the claim's fence; a write with an old fence is refused.
func Example() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "board-example-")
	defer os.RemoveAll(dir)
	db, _ := sqlstore.Open(ctx, sqlstore.Config{SQLitePath: filepath.Join(dir, "promptd.db")})
	defer sqlstore.Close(db)
	_ = sqlstore.Migrate(ctx, db, migrations()...)
	s := board.New(board.Options{DB: db, Instance: "example"})

	s.Create(ctx, "crawl", board.RecordInput{ID: "page-1", Payload: []byte(`{"url": "https://example.com"}`)})
	c, _ := s.ClaimNext(ctx, "crawl", board.ClaimInput{Holder: "worker-1"})
	fmt.Println(c.ID, c.State, c.Owner, c.Fence)

	running := "running"
	r, _ := s.Patch(ctx, "crawl", c.ID, board.Update{ExpectedRevision: c.Revision, Fence: &c.Fence, State: &running})
	done := "done"
	r, _ = s.Patch(ctx, "crawl", c.ID, board.Update{ExpectedRevision: r.Revision, Fence: &c.Fence, State: &done, Payload: []byte(`{"status": 200}`)})
	fmt.Println(r.State, r.Owner == "", string(r.Payload))

	// Every record terminal: the board's creator (here "system", no token)
	// deletes it.
	err := s.DeleteBoard(ctx, "crawl", board.Deleter{Name: "system"})
	_, err2 := s.GetBoard(ctx, "crawl")
	fmt.Println(err, errors.Is(err2, board.ErrBoardNotFound))
	// Output:
	// page-1 claimed worker-1 1
	// done true {"status": 200}
	// <nil> true
}

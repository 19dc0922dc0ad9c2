package leases_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/promptd/promptd/leases"
	"github.com/promptd/promptd/locks"
)

// A lease on two resources, all or nothing; another holder is turned away
// and told which resource blocks it; any instance renews and releases the
// lease by its ID and token.
func Example() {
	ctx := context.Background()
	locker := locks.NewMemory(locks.Options{})
	defer locker.Close(ctx)
	svc := leases.New(leases.Options{Locker: locker})

	l, err := svc.Acquire(ctx, leases.AcquireInput{Resources: []string{"orders/42", "machines/m7"}, Holder: "agent-1", TTL: 5 * time.Second})
	if err != nil {
		panic(err)
	}
	fmt.Println("resources:", l.ID.Resources(), "fenced:", l.Fences["orders/42"] > 0)

	_, err = svc.Acquire(ctx, leases.AcquireInput{Resources: []string{"machines/m7", "machines/m8"}, Holder: "agent-2"})
	var held *leases.HeldError
	if errors.As(err, &held) {
		fmt.Println("held:", held.Conflicts[0].Resource, "by", held.Conflicts[0].Holder)
	}

	id, _ := leases.ParseID(l.ID.String()) // what a client sends back
	if _, err := svc.Renew(ctx, id, l.Token, 10*time.Second); err != nil {
		panic(err)
	}
	fmt.Println("released:", svc.Release(ctx, id, l.Token) == nil)

	var lost *leases.LostError
	if errors.As(svc.Release(ctx, id, l.Token), &lost) {
		fmt.Println("released again: lost", lost.Resources)
	}
	// Output:
	// resources: [machines/m7 orders/42] fenced: true
	// held: machines/m7 by agent-1
	// released: true
	// released again: lost [machines/m7 orders/42]
}

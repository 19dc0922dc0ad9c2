// Package leases is promptd's generic lease service: locks on business
// resources (an order, a machine) that agent tools hold across systems.
//
// A lease takes 1..MaxResources resources all or nothing, in sorted order,
// with one owner token (locks.Locker.AcquireAll without keepalive: its
// holder renews and releases it by token, through any instance). Its ID
// names its resources, so nothing is stored besides the locks themselves;
// each resource has its own fence for the writes it guards. Acquisitions,
// releases and failed renewals are audited through an audit.Batcher,
// never slowing the lease path.
//
// The package knows nothing of HTTP: its errors are typed (*HeldError,
// *LostError, ErrNotFound, and the invalid-input errors of locks and
// promptstore) and api maps them to problem responses.
package leases

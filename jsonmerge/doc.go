// Package jsonmerge merges three versions of a JSON document: the base both
// sides started from, ours (the one an agent submitted from that stale
// base) and theirs (the current one). Prompt configs and board record
// payloads are merged this way when a write lost a revision race, so a
// change made on one side only is never lost and a real disagreement is
// reported, not guessed.
//
// The rules apply at every path, with b, o and t the values there on each
// side, any of them possibly absent (the member or element does not exist):
//
//  1. o equals t: o (both made the same change, or neither did).
//  2. o equals b: t; t equals b: o (one side changed, added or deleted it).
//  3. o and t are objects and b is an object or absent: member by member
//     over the union of the names. Two sides that added the same object
//     therefore merge when their members do not collide.
//  4. o and t are keyed arrays and b is one too or absent: element by
//     element, matched by key (below).
//  5. Otherwise: a Conflict at the path, carrying the three values.
//
// Values are equal when their canonical forms are: objects member-wise
// whatever the order of their members, strings after unescaping, numbers by
// their literal text exactly as written (1.0, 1 and 1e0 are three different
// values; a number is never rewritten, so 1.50 stays 1.50).
//
// An array is keyed when, for the first of Options.Keys that works for all
// of the arrays at the path together, every element of each of them is an
// object holding that member as a non-empty string, unique within its
// array. Any other array (strings, messages without names, a repeated
// name) is one value, merged by rules 1, 2 and 5 only.
//
// In a keyed merge each element is merged as the value at its path
// (tools[name=search]), absent on a side that lacks it: deleting an element
// the other side kept unchanged deletes it; deleting one the other side
// changed is a conflict. The order of the result:
//
//   - neither side moved the base elements it kept: base order;
//   - one side moved them: that side's order;
//   - both moved them: the order they agree on, or, when their orders of
//     the elements all three share differ, one conflict at the array's path.
//
// An element added by a side goes after the element before it on that
// side that the chosen order has (at the start if none); at the same
// place, ours' additions come before theirs', each side's in its own order.
// That tie is the only asymmetry between ours and theirs.
//
// Input must be exactly one JSON value in valid UTF-8, nested at most
// MaxDepth deep, and no object may name a member twice (which of the two a
// side meant cannot be told).
package jsonmerge

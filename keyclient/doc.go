// Package keyclient fetches Snowflake keys from a shardkeeper node's key
// ports: the datagram port (serve --udp ADDR, [DialUDP]) and the Redis
// protocol port (serve --resp ADDR, [DialRESP]). docs/key-protocols.md
// describes both wire formats, their errors and limits; this package is
// their Go implementation, and the node's own tests use it.
//
// # What a key is worth
//
// Every key a client returns was issued once, by the node's one
// generator, to this request: a key is never returned twice, by one client
// or by two. A request that gets no reply in time is sent again; the
// node keeps no state per client, so the resend is a new request and gets
// new keys, and the keys of a lost or late reply are dropped unused. That
// is safe because a key that nobody uses is only a gap: keys are unique,
// not dense.
//
//   - [UDP] sends a request again when its reply does not come within
//     Timeout (doubling per try, Retries times), and takes only the reply
//     to its current request's id: a late reply to an earlier try, or to
//     an earlier request, is ignored, never returned as the answer to a
//     later one.
//   - [RESP] waits for its reply within Timeout; on a timeout or a broken
//     connection it closes the connection (so a late reply cannot be read
//     as the answer to the next command), dials again and sends the
//     command once more, Retries times.
//
// A node that holds no worker id with a valid time reservation answers
// every key request with an error matching [ErrNotIssuing]; it is not
// retried.
//
// Neither port has authentication or encryption: use them on loopback or
// a trusted network.
package keyclient

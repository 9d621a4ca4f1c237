// Package node is the implementation of a cluster compute node behind the
// public cluster package. Its Config adds to cluster.Config the unsafe
// switches that turn parts of the fence off; they exist for the negative
// controls of tests and chaos runs, which show what the fence prevents.
package node

package keyclient_test

import (
	"context"
	"fmt"
	"time"

	"github.com/shardkeeper/shardkeeper/keyclient"
)

// A node started with `shardkeeper serve --resp 127.0.0.1:6380 --udp
// 127.0.0.1:6381` hands out keys on both ports.
func Example() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()

	u, err := keyclient.DialUDP("127.0.0.1:6381")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer u.Close()
	key, err := u.NextID(ctx) // sent again after 20, 40, ... ms without a reply
	fmt.Println(key, err)

	r, err := keyclient.DialRESP(ctx, "127.0.0.1:6380")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer r.Close()
	keys, err := r.AppendIDs(ctx, nil, 1000) // one NEXTIDB 1000
	fmt.Println(len(keys), err)
}

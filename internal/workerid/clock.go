package workerid

import "time"

func systemMillis() int64 { return time.Now().UnixMilli() }

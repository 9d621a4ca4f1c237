package keyserver

const (
	sysRecvmmsg   = 243
	sysSendmmsg   = 269
	msgWaitForOne = 0x10000
)

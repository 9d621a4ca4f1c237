package keyserver

const (
	sysRecvmmsg   = 299
	sysSendmmsg   = 307
	msgWaitForOne = 0x10000
)

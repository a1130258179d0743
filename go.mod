module github.com/fp8lab/fp8lab

go 1.26.8

require (
	github.com/chromedp/cdproto v0.159.0
	github.com/chromedp/chromedp v0.23.0
	github.com/cogentcore/webgpu v0.23.0
	github.com/gorilla/websocket v1.5.3
	github.com/x448/float16 v0.8.4
	go.etcd.io/bbolt v1.5.0
	gonum.org/v1/gonum v0.17.0
)

require (
	github.com/go-json-experiment/json v0.0.0-20260213210345-44df1a37e875 // indirect
	golang.org/x/sys v0.45.0 // indirect
)

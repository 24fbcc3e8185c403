module cgo_threads

go 1.19

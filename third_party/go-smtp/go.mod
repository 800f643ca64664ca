module github.com/emersion/go-smtp

require github.com/emersion/go-sasl v0.0.0-20241020182733-b788ff22d5a6

go 1.13

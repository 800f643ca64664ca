// Package sieve is the Sieve mail filtering language (RFC 5228): a parser
// that checks a script once (Parse) and an interpreter that runs it
// against each delivered message (Script.Run), returning the actions for
// the delivery use case to carry out. It sends, stores and rejects
// nothing itself.
//
// Extensions (the capability strings of Extensions): fileinto, reject
// and ereject (RFC 5429), envelope, encoded-character (RFC 5228 section
// 2.4.2.4), imap4flags (RFC 5232), vacation (RFC 5230), copy (RFC 3894),
// body (RFC 5173), variables (RFC 5229), relational (RFC 5231) with
// comparator-i;ascii-numeric (RFC 4790), subaddress (RFC 5233), mailbox
// (RFC 5490: mailboxexists and fileinto :create), date and index (RFC
// 5260), and regex (draft-ietf-sieve-regex). A script that uses an
// extension it did not require, or requires one not offered
// (ParseOptions.Extensions), is refused by Parse with the line and
// column.
//
// The :regex match type uses Go's regexp package: RE2 syntax
// (https://github.com/google/re2/wiki/Syntax), not POSIX extended
// expressions as the draft says; back-references are not there, and
// matching takes time linear in the input. With the default comparator
// i;ascii-casemap the expression is case-insensitive ("(?i)"); with
// i;octet it is not. Its groups 0 to 9 set the match variables ${0} to
// ${9} when variables is required, as :matches does for its wildcards.
//
// # Actions and the implicit keep
//
// Result.Actions follow RFC 5228 section 2.10: keep, fileinto (without
// :copy), redirect (without :copy), discard and reject cancel the
// implicit keep; the same folder or address twice is one action;
// fileinto "INBOX" is keep. reject and ereject may run once, and not
// with vacation, keep, fileinto or redirect (RFC 5429 section 2.4): the
// conflict is a run-time error. vacation may run once. A run-time error
// returns the error, and the caller keeps the message in INBOX (RFC
// 5228 section 2.10.6). The vacation action carries its parameters:
// whether to reply is the responder's decision, helped by ShouldRespond
// (RFC 5230 sections 4.5 and 4.6).
//
// # Limits
//
// Parse refuses a script larger than 64 KiB (ParseOptions.MaxSize),
// nested more than 64 blocks or tests deep, with a string list of more
// than 1,024 strings, or with more than 64 regular expressions
// (ParseOptions.MaxRegexps) each at most 4 KiB long; a :regex key
// without variables is compiled once, at parse time.
//
// Run bounds the work of one message (RunOptions): at most 50,000 steps
// (each command, test and value-key comparison is one; pattern
// matching, variable expansion and body decoding add one per 256 octets
// compared, written or decoded), at most 64 regular expressions
// compiled from keys holding variables, at most 64 KiB of a value given
// to one :matches or :regex match, at most 1 MiB of body read by the
// body test (beyond it the body is not seen), 4 KiB per variable and
// match variable (RFC 5229 section 4 lets longer values be truncated),
// 64 KiB per string after variable expansion, 256 flags per flag list,
// and 5 distinct redirects. Exceeding a limit is an error wrapping
// ErrLimit. The context is checked every 64 steps.
//
// # The body test
//
// :raw is the body after the header, undecoded. :text and :content see
// each leaf MIME part decoded (transfer encoding, then charset to
// UTF-8), one value per part; :text takes the text/* parts (a part
// without Content-Type is text/plain) and drops the tags of text/html.
// A message/rfc822 part is one part (its own parts are not walked), and
// the prologue and epilogue of multipart parts are not tested.
//
// # Compared with Pigeonhole
//
// The RFC examples were also run through Debian's dovecot-sieve
// (sieve-test) with the same results, except two places where this
// package follows the RFC: i;ascii-casemap orders after mapping letters
// to upper case (RFC 4790 section 9.2; Pigeonhole maps to lower case,
// which puts "_" below letters), and an empty group
// ("undisclosed-recipients:;") holds no address for :count.
//
// Scripts run concurrently: a Script is not changed by Run.
package sieve

package imapd

import (
	"context"
	"errors"
	"fmt"

	"github.com/emersion/go-imap/v2"
	"github.com/emersion/go-imap/v2/imapserver"

	"github.com/mailhost/mailhost/credential"
	"github.com/mailhost/mailhost/mailstore"
)

// fail maps an error to the IMAP response the client gets (response codes
// from RFC 5530). Errors the client cannot act on are answered NO
// [SERVERBUG] without detail; each is counted (Server.ServerBugs) and
// logged here, once, with its command.
func (s *session) fail(op string, err error) error {
	var imapErr *imap.Error
	switch {
	case err == nil:
		return nil
	case errors.As(err, &imapErr):
		return imapErr
	case errors.Is(err, credential.ErrInvalidCredentials):
		return imapserver.ErrAuthFailed
	case errors.Is(err, credential.ErrThrottled):
		return no(imap.ResponseCodeUnavailable, "Too many failed logins, try again later")
	case errors.Is(err, mailstore.ErrOverQuota):
		return no(imap.ResponseCodeOverQuota, "Mailbox is over quota")
	case errors.Is(err, mailstore.ErrFolderNotFound):
		return no(imap.ResponseCodeNonExistent, "No such mailbox")
	case errors.Is(err, mailstore.ErrFolderExists):
		return no(imap.ResponseCodeAlreadyExists, "Mailbox already exists")
	case errors.Is(err, mailstore.ErrTooManyFolders):
		return no(imap.ResponseCodeLimit, "Too many mailboxes")
	case errors.Is(err, mailstore.ErrKeywordTooLong):
		return no(imap.ResponseCodeLimit, fmt.Sprintf("Keyword too long: at most %d bytes", mailstore.MaxKeywordBytes))
	case errors.Is(err, mailstore.ErrTooManyKeywords):
		return no(imap.ResponseCodeLimit, "Too many keywords in this mailbox")
	case errors.Is(err, mailstore.ErrTooManySubscriptions):
		return no(imap.ResponseCodeLimit, "Too many subscriptions")
	case errors.Is(err, mailstore.ErrFolderProtected):
		return no(imap.ResponseCodeCannot, "INBOX cannot be deleted or renamed")
	case errors.Is(err, mailstore.ErrMessageNotFound):
		return no(imap.ResponseCodeNonExistent, "No such message")
	case errors.Is(err, mailstore.ErrMailboxNotFound):
		// The account was deleted while logged in.
		return no(imap.ResponseCodeUnavailable, "Account no longer exists")
	case errors.Is(err, mailstore.ErrInvalidArgument):
		return no(imap.ResponseCodeCannot, "Invalid request")
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return no(imap.ResponseCodeUnavailable, "Server shutting down")
	case errors.Is(err, mailstore.ErrNoSpace):
		// Temporary (RFC 5530 UNAVAILABLE), not OVERQUOTA: the account
		// is within its quota, the server's disk is full. Nothing was
		// stored; logged, since only the operator can act.
		s.log.Error(op, "err", err)
		return no(imap.ResponseCodeUnavailable, "Server storage is full, try again later")
	}
	s.srv.serverBugs.Add(1)
	s.log.Error("server bug", "command", s.conn.CommandName(), "err", fmt.Errorf("%s: %w", op, err))
	return no(imap.ResponseCodeServerBug, "Internal server error")
}

// tryCreate is fail for a COPY, MOVE or APPEND target: a missing folder is
// answered [TRYCREATE] (RFC 9051 section 6.3.12).
func (s *session) tryCreate(op string, err error) error {
	if errors.Is(err, mailstore.ErrFolderNotFound) {
		return no(imap.ResponseCodeTryCreate, "No such mailbox")
	}
	return s.fail(op, err)
}

func no(code imap.ResponseCode, text string) *imap.Error {
	return &imap.Error{Type: imap.StatusResponseTypeNo, Code: code, Text: text}
}

// Errors of the session itself.
var (
	errNotLoggedIn = &imap.Error{Type: imap.StatusResponseTypeBad, Text: "Not logged in"}
	errNoSelection = &imap.Error{Type: imap.StatusResponseTypeBad, Text: "No mailbox selected"}
	errReadOnly    = no(imap.ResponseCodeCannot, "Mailbox is read-only (EXAMINE)")
	errSuspended   = no(imap.ResponseCodeUnavailable, "Account suspended")
)

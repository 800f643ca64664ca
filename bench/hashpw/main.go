// Command hashpw prints the argon2id hash mailhost would store for the
// password given as its argument (credential.HashPassword: 19 MiB, 2
// passes, 1 lane), in the PHC form that Dovecot's ARGON2ID scheme (through
// libsodium) also verifies. bench/postfix-dovecot.sh uses it so that both
// servers pay the same cost for a password check.
package main

import (
	"fmt"
	"os"

	"github.com/mailhost/mailhost/credential"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: hashpw PASSWORD")
		os.Exit(2)
	}
	h, err := credential.HashPassword(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, "hashpw:", err)
		os.Exit(1)
	}
	fmt.Println(h)
}

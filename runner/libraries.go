package runner

// The shipped lock libraries register as lib:NAME designs; importing them
// here makes the names valid wherever a design is named, in workers too.
import _ "github.com/locktest/locktest/clients"

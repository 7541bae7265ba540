// Package activities holds the side-effecting steps of the suite's
// workflows. Each group of activities is a struct of its dependencies (DB,
// identity client, Stripe, OpenAI, push), registered on the worker as an
// instance; workflows call its methods through a nil pointer of the type.
package activities

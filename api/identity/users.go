package identity

import (
	"context"
	"errors"

	"github.com/alexedwards/argon2id"
	"gorm.io/gorm"

	"github.com/business-suite/suite/internal/database"
	"github.com/business-suite/suite/models"
)

// Users: sign-up with an argon2id password hash, and the password check
// of a sign-in.

var errInvalidGrant = models.Err(models.ErrUnauthorized, "invalid_grant", "The e-mail address or password is wrong.")

// NewUser is a user with the password's argon2id hash: slow on purpose,
// so it is made before the transaction that records the user begins (on
// SQLite that transaction holds the write lock).
func (s *Service) NewUser(email, password, name string) (*models.IdentityUser, error) {
	hash, err := argon2id.CreateHash(password, s.cfg.PasswordParams)
	if err != nil {
		return nil, err
	}
	return &models.IdentityUser{ID: models.NewID(), Email: models.NormalizeEmail(email), Name: name, PasswordHash: hash}, nil
}

// SignUp records u (a NewUser) in tx; an e-mail address already taken is a
// 409.
func (s *Service) SignUp(tx *gorm.DB, u *models.IdentityUser) error {
	if err := tx.Create(u).Error; err != nil {
		if database.IsUniqueViolation(err) {
			return models.Err(models.ErrConflict, "email_taken", "An account with this e-mail address exists; sign in instead.")
		}
		return err
	}
	return nil
}

// Authenticate checks the credentials, reading on the pool: it hashes the
// password, which takes long on purpose, before anything is written.
func (s *Service) Authenticate(ctx context.Context, email, password string) (*models.IdentityUser, error) {
	var u models.IdentityUser
	err := s.db.WithContext(ctx).Take(&u, "email = ?", models.NormalizeEmail(email)).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		// Spend the same time as for a real account: no user enumeration by timing.
		_, _ = argon2id.ComparePasswordAndHash(password, s.fake)
		return nil, errInvalidGrant
	}
	if err != nil {
		return nil, err
	}
	ok, err := argon2id.ComparePasswordAndHash(password, u.PasswordHash)
	if err != nil || !ok {
		return nil, errInvalidGrant
	}
	return &u, nil
}

// SignIn issues u's tokens in a new family (a sign-in session), in tx.
func (s *Service) SignIn(tx *gorm.DB, u *models.IdentityUser) (*TokenPair, error) {
	return s.issue(tx, u, models.NewID())
}

// User loads a user by id.
func (s *Service) User(ctx context.Context, id string) (*models.IdentityUser, error) {
	var u models.IdentityUser
	if !models.ValidID(id) {
		return nil, models.ErrNotFound
	}
	if err := s.db.WithContext(ctx).Take(&u, "id = ?", id).Error; err != nil {
		if errors.Is(err, gorm.ErrRecordNotFound) {
			return nil, models.ErrNotFound
		}
		return nil, err
	}
	return &u, nil
}

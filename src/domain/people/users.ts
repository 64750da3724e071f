import { DomainError } from '../errors.js';
import type { PeopleStore, User } from '../stores.js';
import { hashPassword } from './passwords.js';

const EMAIL = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;

/**
 * Adds a staff person, or updates the name (and password, when given) of the person with that
 * e-mail, so set-up scripts can be run again.
 */
export async function addUser(
  people: PeopleStore,
  input: { email: string; name: string; password?: string },
): Promise<{ user: User; created: boolean }> {
  const email = input.email.trim().toLowerCase();
  if (!EMAIL.test(email)) throw new DomainError('invalid_email', { email: input.email });
  if (!input.name.trim()) throw new DomainError('invalid_name');
  if (input.password !== undefined && input.password.length < 10) throw new DomainError('password_too_short', { min: 10 });
  const passwordHash = input.password === undefined ? undefined : await hashPassword(input.password);
  const existing = await people.findUserByEmail(email);
  if (existing) {
    await people.updateUser(existing.id, { name: input.name.trim(), ...(passwordHash ? { passwordHash } : {}) });
    return { user: { ...existing, name: input.name.trim() }, created: false };
  }
  const id = await people.insertUser({ email, name: input.name.trim(), passwordHash: passwordHash ?? null });
  return { user: { id, email, name: input.name.trim(), passwordHash: passwordHash ?? null }, created: true };
}

export async function requireUser(people: PeopleStore, email: string): Promise<User> {
  const user = await people.findUserByEmail(email.trim().toLowerCase());
  if (!user) throw new DomainError('user_not_found', { email });
  return user;
}

import bcrypt from 'bcryptjs';

/**
 * Staff passwords are stored only as bcrypt hashes (bcryptjs: maintained, pure JavaScript, so
 * nothing native to build). Cost 12 is about 250 ms here: slow for guessing, fine for a sign-in.
 */
const COST = 12;

export function hashPassword(password: string): Promise<string> {
  return bcrypt.hash(password, COST);
}

export function passwordMatches(password: string, hash: string): Promise<boolean> {
  return bcrypt.compare(password, hash);
}

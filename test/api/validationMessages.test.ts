import { expect } from 'chai';
import type { components } from '../../generated/openapi.js';
import type { Problem } from '../helpers/answerTypes.js';
import { present } from '../helpers/only.js';
import { useStudyWorld } from '../helpers/studyWorld.js';

/**
 * Issue 19.5: a request the contract refuses is answered with errors a person can act on, in English
 * and Russian: each entry names the member, what would have been accepted (the allowed values, the
 * format with an example, the limit) and the value received, shortened.
 */
describe('refusals by the contract name the allowed values, the format and the value received', () => {
  const { app, world } = useStudyWorld();
  const enrolment = (over: Record<string, unknown> = {}) => ({ site: '01', sex: 'female', birth_year: 1961, enrolled_on: '2026-01-15', ...over });
  const enrol = (body: unknown, lang = 'en') => app.call<Problem>('POST', `/api/v1/studies/${world.code}/patients?lang=${lang}`, { key: world.key, body });
  const list = (query: string) => app.call<Problem>('GET', `/api/v1/studies/${world.code}/patients?${query}`, { key: world.key });
  const entryAt = (body: { errors?: components['schemas']['ProblemError'][] }, pointer: string) => {
    const entry = body.errors?.find((e) => e.pointer === pointer);
    expect(entry, `an entry at ${pointer} in ${JSON.stringify(body.errors)}`).to.not.equal(undefined);
    return present(entry, `an entry at ${pointer}`);
  };

  it('enum: an enrolment with sex "F" and lang=ru is refused in Russian naming female, male, other, unknown', async () => {
    const ru = await enrol(enrolment({ sex: 'F' }), 'ru');
    expect(ru.status).to.equal(422);
    expect(ru.body).to.deep.include({ code: 'invalid_body', title: 'Неверное тело запроса' });
    expect(ru.body.errors).to.deep.equal([{
      pointer: '/sex', code: 'enum', allowed: ['female', 'male', 'other', 'unknown'], received: '"F"',
      message: 'Значение "sex" должно быть одним из: female, male, other, unknown; получено "F".',
    }]);
    const en = await enrol(enrolment({ sex: 'F' }));
    expect(entryAt(en.body, '/sex')).to.deep.include({ message: '"sex" must be one of: female, male, other, unknown; received "F".' });
  });

  it('format: a date that is not one names the format with an example, in both languages', async () => {
    const en = await enrol(enrolment({ enrolled_on: '15.01.2026' }));
    expect(en.status).to.equal(422);
    expect(entryAt(en.body, '/enrolled_on')).to.deep.equal({
      pointer: '/enrolled_on', code: 'format', expected_format: 'date', example: '2026-03-01', received: '"15.01.2026"',
      message: '"enrolled_on" must be in date format, for example 2026-03-01; received "15.01.2026".',
    });
    const ru = await enrol(enrolment({ enrolled_on: '15.01.2026' }), 'ru');
    expect(entryAt(ru.body, '/enrolled_on')).to.deep.include({ message: 'Значение "enrolled_on" должно быть в формате date, например 2026-03-01; получено "15.01.2026".' });
  });

  it('type, minimum, maximum, pattern, required and an unknown member: each entry says what is accepted and what came', async () => {
    const res = await enrol({ sex: 'male', birth_year: '1961', enrolled_on: '2026-01-15', subject: '-x', nickname: 'Bob' });
    expect(res.status).to.equal(422);
    expect(entryAt(res.body, '/birth_year')).to.deep.include({ code: 'type', received: '"1961"', message: '"birth_year" must be of JSON type integer; received "1961".' });
    expect(entryAt(res.body, '/subject')).to.deep.include({
      code: 'pattern', example: 'HIS-4711', received: '"-x"',
      message: '"subject" must match the pattern ^[A-Za-z0-9][A-Za-z0-9._-]{0,31}$, for example HIS-4711; received "-x".',
    });
    expect(entryAt(res.body, '/site')).to.deep.equal({ pointer: '/site', code: 'required', message: 'A value for "site" is required.' });
    expect(entryAt(res.body, '/nickname')).to.deep.equal({
      pointer: '/nickname', code: 'additionalProperties', allowed: ['site', 'sex', 'birth_year', 'enrolled_on', 'subject'],
      message: 'Unknown member "nickname"; the members are: site, sex, birth_year, enrolled_on, subject.',
    });
    const low = await enrol(enrolment({ birth_year: 1850 }), 'ru');
    expect(entryAt(low.body, '/birth_year')).to.deep.include({ code: 'minimum', received: '1850', message: 'Значение "birth_year" должно быть не меньше 1900; получено 1850.' });
    const high = await enrol(enrolment({ birth_year: 2200 }));
    expect(entryAt(high.body, '/birth_year')).to.deep.include({ code: 'maximum', received: '2200', message: '"birth_year" must be at most 2100; received 2200.' });
  });

  it('minLength and maxLength count the characters and shorten a long value to 60 characters with an ellipsis', async () => {
    const long = 'Ж'.repeat(40);
    const res = await enrol(enrolment({ site: long }), 'ru');
    expect(entryAt(res.body, '/site')).to.deep.include({
      code: 'maxLength', received: `"${'Ж'.repeat(40)}"`,
      message: `Длина "site" должна быть не больше 32; получена длина 40: "${long}".`,
    });
    const longer = await enrol(enrolment({ site: 'x'.repeat(5000) }));
    const entry = entryAt(longer.body, '/site');
    expect(entry.received).to.equal(`"${'x'.repeat(58)}…`);
    expect([...entry.received ?? '']).to.have.length(60);
    expect(entry.message).to.equal(`The length of "site" must be at most 32; received length 5000: "${'x'.repeat(58)}….`);
    const empty = await enrol(enrolment({ site: '' }));
    expect(entryAt(empty.body, '/site')).to.deep.include({ code: 'minLength', message: 'The length of "site" must be at least 1; received length 0: "".' });
  });

  it('minItems: an empty list of records names the least number of items', async () => {
    const res = await app.call<Problem>('POST', `/api/v1/studies/${world.code}/records?lang=ru`, { key: world.key, body: { records: [] } });
    expect(res.status).to.equal(422);
    expect(res.body.errors).to.deep.equal([{ pointer: '/records', code: 'minItems', message: 'Число элементов "records" должно быть не меньше 1; получено 0.' }]);
  });

  it('a member deep in the body is named by its path', async () => {
    const res = await app.call<Problem>('POST', `/api/v1/studies/${world.code}/records`, { key: world.key, body: { records: [{ subject: '01-001', visit: 'screening', form: 'vs', values: { sbp: 120 } }] } });
    expect(res.status).to.equal(422);
    expect(res.body.errors).to.deep.equal([{
      pointer: '/records/0/values/sbp', code: 'type', received: '120',
      message: '"records[0].values.sbp" must be of JSON type string; received 120.',
    }]);
  });

  it('query parameters: enum, date-time with the parameter\'s own example and minimum, in English and in Russian', async () => {
    const en = await list('status=final&updated_since=yesterday&limit=0');
    expect(en.status).to.equal(400);
    expect(en.body.code).to.equal('invalid_parameter');
    expect(entryAt(en.body, '/query/status')).to.deep.equal({
      pointer: '/query/status', code: 'enum', allowed: ['enrolled', 'completed', 'withdrawn'], received: '"final"',
      message: '"status" must be one of: enrolled, completed, withdrawn; received "final".',
    });
    expect(entryAt(en.body, '/query/updated_since')).to.deep.include({
      code: 'format', expected_format: 'date-time', example: '2026-03-20T08:00:00.000Z', received: '"yesterday"',
      message: '"updated_since" must be in date-time format, for example 2026-03-20T08:00:00.000Z; received "yesterday".',
    });
    expect(entryAt(en.body, '/query/limit')).to.deep.include({ code: 'minimum', received: '0', message: '"limit" must be at least 1; received 0.' });
    const ru = await list('status=final&lang=ru');
    expect(entryAt(ru.body, '/query/status')).to.deep.include({ message: 'Значение "status" должно быть одним из: enrolled, completed, withdrawn; получено "final".' });
  });

  it('query parameters: a value that is no number names the type and echoes what came', async () => {
    const res = await list('limit=ten&lang=ru');
    expect(res.status).to.equal(400);
    expect(entryAt(res.body, '/query/limit')).to.deep.include({ code: 'type', received: '"ten"', message: 'Значение "limit" должно иметь JSON-тип integer; получено "ten".' });
  });

  it('path parameters: a file name off its pattern names the pattern and the parameter\'s example', async () => {
    const res = await app.call<Problem>('GET', '/api/v1/docs/assets/Swagger.CSS?lang=ru');
    expect(res.status).to.equal(400);
    expect(res.body.code).to.equal('invalid_parameter');
    expect(res.body.errors).to.deep.equal([{
      pointer: '/path/file', code: 'pattern', example: 'swagger-ui.css', received: '"Swagger.CSS"',
      message: 'Значение "file" должно соответствовать шаблону ^[a-z0-9][a-z0-9.-]{0,63}$, например swagger-ui.css; получено "Swagger.CSS".',
    }]);
  });
});

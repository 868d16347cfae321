import cron from 'node-cron';
import { describe, expect, it } from 'vitest';
import { CronSyntaxError, formatDuration, parseCron, parseDuration } from '../../src/strategy/index.js';

describe('parseCron', () => {
  it('reads 5 fields with second 0, and 6 fields with seconds first', () => {
    const five = parseCron('0 10 * * 1-5');
    expect(five.hasSeconds).toBe(false);
    expect(five.seconds).toEqual([0]);
    expect(five.minutes).toEqual([0]);
    expect(five.hours).toEqual([10]);
    expect([...five.daysOfWeek].sort()).toEqual([1, 2, 3, 4, 5]);
    const six = parseCron('*/15 * * * * *');
    expect(six.hasSeconds).toBe(true);
    expect(six.seconds).toEqual([0, 15, 30, 45]);
  });

  it.each([
    ['0 9-17/4 * * *', 'hours', [9, 13, 17]],
    ['5,10,5 * * * *', 'minutes', [5, 10]],
    ['0 0 * * SUN,7', 'daysOfWeek', [0]],
    ['0 0 * * mon-fri', 'daysOfWeek', [1, 2, 3, 4, 5]],
    ['0 0 1 JAN-MAR/2 *', 'months', [1, 3]],
    ['0 0 ? * 1', 'daysOfWeek', [1]],
  ])('%s → %s %j', (text, field, expected) => {
    const parsed = parseCron(text) as unknown as Record<string, Iterable<number>>;
    expect([...parsed[field]!].sort((a, b) => a - b)).toEqual(expected);
  });

  it('accepts only what node-cron (which the engine fires with) also accepts', () => {
    const accepted = [
      '0 10 * * 1-5',
      '*/15 * * * * *',
      '0 9-17/4 * * *',
      '0 0 * * SUN,7',
      '0 0 1 JAN-MAR/2 *',
      '0 0 ? * 1',
    ];
    for (const text of accepted) {
      expect(() => parseCron(text)).not.toThrow();
      expect(cron.validate(text), text).toBe(true);
    }
  });

  it.each([
    ['* * * *', 'expected 5 fields (or 6 with seconds first), found 4'],
    ['* * * * * * *', 'expected 5 fields (or 6 with seconds first), found 7'],
    ['61 * * * *', 'minute field "61": 61 is out of range 0-59'],
    ['* 24 * * *', 'hour field "24": 24 is out of range 0-23'],
    ['0 0 0 * *', 'day-of-month field "0": 0 is out of range 1-31'],
    ['0 0 * 13 *', 'month field "13": 13 is out of range 1-12'],
    ['0 0 * * 8', 'day-of-week field "8": 8 is out of range 0-7'],
    ['*/0 * * * *', 'minute field "*/0": step "0" must be a whole number of at least 1'],
    ['5/15 * * * *', 'minute field "5/15": a step needs * or a range before it, as in */15'],
    ['0 22-2 * * *', 'hour field "22-2": range "22-2" runs backwards; write it as two ranges'],
    ['0 0 L * *', 'day-of-month field "L": "L" is not a number'],
    [
      '0 0 * * 1#2',
      'day-of-week field "1#2": "1#2" is not a number or a name (sun, mon, tue, wed, thu, fri, sat)',
    ],
    ['1,,2 * * * *', 'minute field "1,,2": empty or malformed item ""'],
    [
      '0 0 1 * 1',
      'restricts both day-of-month and day-of-week; cron implementations disagree on whether that means either or both, so use only one of them and leave the other as *',
    ],
  ])('refuses %j: %s', (text, message) => {
    expect(() => parseCron(text)).toThrow(new CronSyntaxError(message));
  });
});

describe('durations', () => {
  it.each([
    ['30s', 30_000],
    ['15m', 900_000],
    ['1h', 3_600_000],
    ['1d', 86_400_000],
    ['1h30m', 5_400_000],
    ['0s', 0],
  ])('%s is %d ms', (text, milliseconds) => {
    expect(parseDuration(text)).toBe(milliseconds);
  });

  it.each(['', '10', '1.5h', '10x', '1m1h', ' 1h', '-1h', '1H'])('refuses %j', (text) => {
    expect(parseDuration(text)).toBeUndefined();
  });

  it.each([
    [90_000, '1m30s'],
    [3_600_000, '1h'],
    [90_061_000, '1d1h1m1s'],
    [0, '0s'],
    [1_500, '1s'],
  ])('%d ms prints as %s', (milliseconds, text) => {
    expect(formatDuration(milliseconds)).toBe(text);
  });
});

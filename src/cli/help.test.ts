import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { dataCommands } from './commands.ts'
import { columns, commandHelp, HELP, processCommands, WIDTH, wrap } from './help.ts'

const every = { ...processCommands, ...dataCommands }

describe('the CLI help', () => {
  test('herold --help fits 80 columns and names every command', () => {
    for (const line of HELP.split('\n')) assert.ok(line.length <= WIDTH, `over ${WIDTH}: ${line}`)
    for (const name of Object.keys(every)) {
      assert.match(HELP, new RegExp(`^  ${name}  +\\S`, 'm'), `${name} and its summary in two columns`)
    }
  })

  test("every command's --help has its usage, no line over 100 columns and an example that runs herold", () => {
    for (const [name, command] of Object.entries(every)) {
      const help = commandHelp(name, command)
      const lines = help.split('\n')
      assert.ok(lines[0].startsWith(`Usage: herold ${name}`), `${name}: ${lines[0]}`)
      for (const line of lines) assert.ok(line.length <= 100, `${name}: over 100 columns: ${line}`)
      // only the example may pass 80 columns (a command line is not broken)
      const example = lines.indexOf('Example:')
      assert.ok(example > 0, `${name} has an example`)
      for (const line of lines.slice(0, example)) assert.ok(line.length <= WIDTH, `${name}: over ${WIDTH}: ${line}`)
      const examples = lines.slice(example + 1).filter((line) => !line.startsWith('    '))
      assert.ok(examples.length > 0)
      for (const line of examples) assert.match(line, /^ {2}(\w+=\S+ )*herold /, `${name}: ${line}`)
      assert.match(help, /^ {2}--json +print one JSON object/m)
    }
  })

  test('usage and description never run into each other: at least two spaces between the columns', () => {
    const rows = columns([
      ['keys create', 'Create an API key; the secret is shown only this once'],
      ['a-name-longer-than-the-column-allows-here', 'its description on the next line'],
    ])
    // the name column is as wide as the longest name up to 26; a longer name gets a line of its own
    assert.match(rows[0], /^ {2}keys create {17}Create an API key; the secret is shown only this$/)
    assert.match(rows[1], /^ {30}once$/)
    assert.equal(rows[2], '  a-name-longer-than-the-column-allows-here')
    assert.match(rows[3], /^ {30}its description on the next line$/)
  })

  test('wrap keeps words whole and lines within the width', () => {
    const lines = wrap('one two three four five six seven eight nine ten', 12)
    assert.deepEqual(lines, ['one two', 'three four', 'five six', 'seven eight', 'nine ten'])
    assert.deepEqual(wrap('a-very-long-single-word', 5), ['a-very-long-single-word'])
  })
})

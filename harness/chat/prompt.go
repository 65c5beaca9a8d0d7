package chat

import (
	"fmt"

	"github.com/spotter-harness/spotter/screen"
)

// uitarsActionSpace lists UI-TARS's computer actions with the exact
// signatures the model was trained on (they are its wire format); the
// comments are Spotter's own.
const uitarsActionSpace = `click(start_box='<|box_start|>(x1,y1)<|box_end|>')
left_double(start_box='<|box_start|>(x1,y1)<|box_end|>')
right_single(start_box='<|box_start|>(x1,y1)<|box_end|>')
drag(start_box='<|box_start|>(x1,y1)<|box_end|>', end_box='<|box_start|>(x3,y3)<|box_end|>')
hotkey(key='') # keys pressed together, separated by spaces, e.g. 'ctrl c'
type(content='') # write \' for ', \" for " and \n for a line break; end content with \n to press Enter after it
scroll(start_box='<|box_start|>(x1,y1)<|box_end|>', direction='down or up or right or left')
wait() # pause for 5 seconds, then look at the new screenshot
finished(content='') # the task is done; put the answer, if one was asked for, in content
call_user() # stop and ask a human, when the task cannot go on without one`

// UITARSPrompt returns Spotter's computer-use instructions for a UI-TARS
// dialect: the output format and the action space. The task follows it,
// after "## User Instruction", in the first user message.
func UITARSPrompt(d Dialect) string {
	coords := "Coordinates are pixels of the screenshot as you see it."
	if d == UITARS10 {
		coords = "Coordinates are relative: 0 to 1000 across the width and the height of the screenshot."
	}
	return `You are a GUI agent operating a computer. You are given a task, the actions you took so far, and screenshots. Decide the next action that brings the task closer to done.

## Output Format
` + "```" + `
Thought: ...
Action: ...
` + "```" + `

## Action Space
` + uitarsActionSpace + `

## Note
- Write the Thought in English: a short plan, then the next action and the element it targets, in one sentence.
- ` + coords + `
`
}

// uitarsTask is the first user message: the instructions, then the task.
func uitarsTask(prompt, task string) string {
	return prompt + "\n## User Instruction\n" + task
}

// FunctionsSystem returns the default system message of the Functions
// dialect for a model answering in space s, with screenshots of size
// display (zero if not known yet).
func FunctionsSystem(s screen.Space, display screen.Size) string {
	return `You operate a computer through the "computer" function. Each call performs one action (or a batch, in "actions") and you then receive a new screenshot. Look at the latest screenshot before every action. ` +
		coordinateHelp(s, display) + ` When the task is done, reply with a message that states the result, without calling the function.`
}

// coordinateHelp says what the function's coordinates mean.
func coordinateHelp(s screen.Space, display screen.Size) string {
	switch s.Kind {
	case screen.GridSpace:
		return fmt.Sprintf("Coordinates are relative: x and y run from 0 to %d across the width and the height of the screenshot.", s.Grid)
	case screen.ResizedSpace:
		if !s.Resized.Empty() {
			return fmt.Sprintf("Coordinates are pixels of the screenshot as you see it (%dx%d).", s.Resized.W, s.Resized.H)
		}
		return "Coordinates are pixels of the screenshot as you see it."
	}
	if !display.Empty() {
		return fmt.Sprintf("Coordinates are pixels of the screenshot: x from 0 to %d, y from 0 to %d.", display.W-1, display.H-1)
	}
	return "Coordinates are pixels of the screenshot, from its top left corner."
}

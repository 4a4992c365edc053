package filter

import (
	"strconv"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/lancerdb/lancer"
)

// function is one scalar function of the language, under one of its names.
type function struct {
	name    string
	minArgs int
	maxArgs int // -1: no limit
	bind    func(b *binder, n *callNode) (evaluator, error)
}

// arity describes the arguments a function takes, for error messages.
func (f *function) arity() string {
	plural := func(n int) string {
		if n == 1 {
			return "1 argument"
		}
		return strconv.Itoa(n) + " arguments"
	}
	switch {
	case f.maxArgs < 0:
		return "at least " + plural(f.minArgs)
	case f.minArgs == f.maxArgs:
		return plural(f.minArgs)
	case f.maxArgs == f.minArgs+1:
		return strconv.Itoa(f.minArgs) + " or " + plural(f.maxArgs)
	}
	return strconv.Itoa(f.minArgs) + " to " + plural(f.maxArgs)
}

// functions maps every function name (aliases included) to its function.
// The names and meanings are DataFusion's, which Lance uses.
var functions = map[string]*function{}

func register(names []string, minArgs, maxArgs int, bind func(b *binder, n *callNode) (evaluator, error)) {
	for _, name := range names {
		functions[name] = &function{name: name, minArgs: minArgs, maxArgs: maxArgs, bind: bind}
	}
}

func init() {
	// Strings.
	register([]string{"lower"}, 1, 1, bindCaseMapping(false))
	register([]string{"upper"}, 1, 1, bindCaseMapping(true))
	register([]string{"length", "char_length", "character_length"}, 1, 1, bindLength(false))
	register([]string{"octet_length"}, 1, 1, bindLength(true))
	register([]string{"trim", "btrim"}, 1, 2, bindTrim(true, true))
	register([]string{"ltrim"}, 1, 2, bindTrim(true, false))
	register([]string{"rtrim"}, 1, 2, bindTrim(false, true))
	register([]string{"starts_with"}, 2, 2, bindStringTest(stringStartsWith))
	register([]string{"ends_with"}, 2, 2, bindStringTest(stringEndsWith))
	register([]string{"contains"}, 2, 2, bindStringTest(stringContains))
	register([]string{"strpos", "instr"}, 2, 2, bindStrpos)
	register([]string{"replace"}, 3, 3, bindReplace)
	register([]string{"substr", "substring"}, 2, 3, bindSubstr)
	register([]string{"regexp_like"}, 2, 3, bindRegexp(false))
	register([]string{"regexp_match"}, 2, 3, bindRegexp(true))

	// Numbers.
	register([]string{"abs"}, 1, 1, bindAbs)
	register([]string{"round"}, 1, 2, bindRounding(roundHalfAway))
	register([]string{"floor"}, 1, 1, bindRounding(roundFloor))
	register([]string{"ceil", "ceiling"}, 1, 1, bindRounding(roundCeil))

	// Nulls.
	register([]string{"coalesce"}, 1, -1, bindCoalesce)
	register([]string{"is_valid"}, 1, 1, bindIsValid)

	// Lists: LanceDB filters list columns with these.
	register([]string{"array_has", "array_contains", "list_has", "list_contains"}, 2, 2, bindArrayHas)
	register([]string{"array_has_any", "list_has_any", "arrays_overlap"}, 2, 2, bindArrayHasSet(true))
	register([]string{"array_has_all", "list_has_all"}, 2, 2, bindArrayHasSet(false))
	register([]string{"array_length", "list_length", "cardinality"}, 1, 1, bindArrayLength)
	register([]string{"make_array", "make_list"}, 0, -1, func(b *binder, n *callNode) (evaluator, error) {
		set, _ := listLiteral(n)
		return b.bindList(set)
	})

	// Structs.
	register([]string{"named_struct"}, 2, -1, bindNamedStruct)
	register([]string{"struct"}, 1, -1, bindStructCall)
}

// bindArgs binds the arguments of a call.
func (b *binder) bindArgs(n *callNode) ([]evaluator, error) {
	args := make([]evaluator, len(n.args))
	for i, a := range n.args {
		ev, err := b.bind(a)
		if err != nil {
			return nil, err
		}
		args[i] = ev
	}
	return args, nil
}

// argError reports an argument of the wrong type.
func (b *binder) argError(n *callNode, i int, want string, got arrow.DataType) error {
	return b.errorf(n.args[i].pos(), lancer.ErrInvalidArgument, "%s needs %s as argument %d, found %s", n.name, want, i+1, typeName(got))
}

// bindIsValid binds is_valid(x), the old Lance spelling of x IS NOT NULL.
func bindIsValid(b *binder, n *callNode) (evaluator, error) {
	args, err := b.bindArgs(n)
	if err != nil {
		return nil, err
	}
	return &isNullEval{x: args[0], negated: true}, nil
}

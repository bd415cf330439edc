package train

// The zoo's models that live in packages of their own register themselves
// when linked; train links them so that every program that trains by name
// (gopir, bench) finds them.
import _ "github.com/gopir/gopir/models/ppyoloe"

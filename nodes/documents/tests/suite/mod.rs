mod fixtures;
mod links;
mod node;
mod preview;
mod slugger;
mod suggestions;
mod support;
mod xss;
